// The high room's header by a computed name: the walls cannot tell where it goes.
#define KJIT_HIGH_HEADER "core/high/high.hpp"
#include KJIT_HIGH_HEADER
int low() { return high() > 0 ? 1 : 0; }
