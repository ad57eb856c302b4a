// libkjit_tools' door into core/compile/ (see core/spi/system.hpp): the options' canonical form,
// the template-kernel scan, the symbol kjit adds to ask NVRTC for extern "C" kernels' types.
#pragma once

#include "core/compile/kernel_types.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/compile/scan/template_kernels.hpp"
