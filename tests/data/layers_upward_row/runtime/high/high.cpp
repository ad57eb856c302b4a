#include "runtime/high/high.hpp"
#include "runtime/low/low.hpp"
int high() { return low() + 1; }
