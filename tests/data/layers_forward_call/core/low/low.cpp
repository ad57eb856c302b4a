#include "core/low/low.hpp"
int high();  // a forward declaration in place of an include of core/high/high.hpp
int low() { return high() > 0 ? 1 : 0; }
