// libkjit_tools' door into core/base/ (see core/spi/system.hpp): the KJIT_* environment table, the
// default log writer, the source reader, the toolkit's places, the run-time library loader and the
// closest-name distance.
#pragma once

#include "core/base/default_log.hpp"
#include "core/base/dynamic_library.hpp"
#include "core/base/edit_distance.hpp"
#include "core/base/environment.hpp"
#include "core/base/source_file.hpp"
#include "core/base/toolkit_location.hpp"
