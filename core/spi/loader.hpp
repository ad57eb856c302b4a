// libkjit_tools' door into core/loader/ (see core/spi/system.hpp): a kernel request and the
// manifests it reads.
#pragma once

#include "core/loader/kernel_request.hpp"
