// A fixture: through the door (allowed), then past it (refused).
#include "core/spi/low.hpp"
#include "core/low/low.hpp"

int x() { return low(); }
