// libkjit_tools' door into core/system/ (core/spi/: the only core headers libkjit_tools includes;
// what it calls of them is exported under KJIT_PRIVATE_<version>, core/libkjit.map.in): kjit's one
// file reader and atomic writer, sizes and durations as spelled.
#pragma once

#include "core/system/file_io.hpp"
#include "core/system/units.hpp"
