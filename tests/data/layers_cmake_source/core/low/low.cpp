#include "core/low/low.hpp"
int low() { return 1; }
