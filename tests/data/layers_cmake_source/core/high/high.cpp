#include "core/high/high.hpp"
#include "core/low/low.hpp"
int high() { return low() + 1; }
