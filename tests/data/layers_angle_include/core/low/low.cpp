#include "core/low/low.hpp"
#include <core/high/high.hpp>
int low() { return 1; }
