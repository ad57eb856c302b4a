// Inline definitions of low.hpp, kept apart: a file the walls must read although it is no .cpp or .hpp.
#include "core/high/high.hpp"
inline int low_inline() { return high(); }
