// A fixture: the door to core/low/ for libkjit_tools.
#pragma once

#include "core/low/low.hpp"
