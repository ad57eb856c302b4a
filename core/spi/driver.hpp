// libkjit_tools' door into core/driver/ (see core/spi/system.hpp): the demangler, the cubin
// reader, a loaded module's image.
#pragma once

#include "core/driver/cubin_info.hpp"
#include "core/driver/module_access.hpp"
#include "core/driver/symbols.hpp"
