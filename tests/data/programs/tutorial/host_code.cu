// Written for kjit's tests: the host code nvcc compiles for the host only, in the shapes a tutorial
// or a project file has it, around kernels that must all come through.
#include <cstdio>
#include <stdarg.h>
#include <string_view>
#include <sys/types.h>
#include <sys/stat.h>
#include <iosfwd>
#include <iostream>

#define HOST_FN(name) int name(int v) { return v + 1; }

struct Timer { float t; Timer() : t(0) {} void start() { t = 1; } };
struct Acc { float v; Acc() { v = 0; } __device__ float get() const { return v + 1.0f; } };

float fx = 1.0f;
dim3 grid[3][2];
static float* d_buffer;
extern int counter;
int a_value = 1, b_value = 2;

__host__ void log_line(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vprintf(fmt, args);
  va_end(args);
}
__host__ static inline int host_twice(int a) { return a * 2; }
template <class T> void fill_host(T* p, int n) { for (int i = 0; i < n; ++i) p[i] = T(); }

__global__ void first_kernel(float* o, const Acc* acc) { o[0] = acc->get(); }

HOST_FN(bump)

__global__ void second_kernel(float* o) {
  std::conditional_t<true, float, int> x = 1.0f;
  o[threadIdx.x] = x;
}

struct Runner {
  explicit Runner(int n) : n_(n), name_("runner") {}
  ~Runner() { std::cout << name_ << std::endl; }
  void run() const;
  int n_;
  const char* name_;
};
void Runner::run() const { log_line("%d\n", n_); }
static void print_name(std::string_view s) { std::cout << s; }

int main(int argc, char** argv) {
  struct stat st;
  stat(argv[0], &st);
  Timer t;
  t.start();
  Runner r(bump(host_twice(argc)));
  r.run();
  print_name("done");
  float* d = nullptr;
  first_kernel<<<1, 1>>>(d, nullptr);
  second_kernel<<<1, 32>>>(d);
  return 0;
}
