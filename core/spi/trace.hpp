// libkjit_tools' door into core/trace/ (see core/spi/system.hpp): the phases a profiling session
// records and the recorder it attaches, NVTX ranges.
#pragma once

#include "core/trace/nvtx.hpp"
#include "core/trace/phase.hpp"
