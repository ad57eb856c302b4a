#include "core/low/low.inl"
int low() { return low_inline() > 0 ? 1 : 0; }
