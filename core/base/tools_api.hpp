// KJIT_TOOLS_API (core/system/tools_api.hpp, where the floors under base/ can use it too): an
// internal of libkjit exported for libkjit_tools alone, under the rule written there.
#pragma once

#include "core/system/tools_api.hpp"
