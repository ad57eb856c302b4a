// Compiles as the control; with KJIT_WRONG_ARGUMENT it passes an int* where the kernel declares
// const float*, which must not compile.
#include <kjit/kjit.hpp>

void launch_it(kjit::Kernel<void(const float*, float*, int)>& k, float* in, float* out, int* wrong) {
#ifdef KJIT_WRONG_ARGUMENT
  k.launch({.grid = {1}, .block = {32}}, wrong, out, 3);
#else
  (void)wrong;
  k.launch({.grid = {1}, .block = {32}}, in, out, 3);
#endif
}

int main() { return 0; }
