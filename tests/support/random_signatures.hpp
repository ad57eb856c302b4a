// Kernels with random parameter lists, and the parameter sizes each must report: for the tests
// of kjit's parameter-size reading (from the cubin on the CPU, against the driver on the GPU).
#pragma once

#include <kjit/program.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace kjit::test {

struct RandomKernel {
  std::string name;                // as written in the source
  std::string expression;          // a name expression (templates), else empty
  std::vector<std::size_t> sizes;  // what the kernel's parameters occupy, in order
};

struct RandomSignatures {
  std::string source;
  std::vector<RandomKernel> kernels;

  kjit::Program program(const std::string& name) const {
    kjit::Program p(name, source);
    for (const auto& k : kernels) {
      if (!k.expression.empty()) p.instantiate(k.expression);
    }
    return p;
  }
};

// `count` kernels of 0..12 parameters drawn from scalars, pointers and structs of odd sizes and
// alignments (one list holds a 6000-byte struct), half extern "C", the rest C++ (mangled) or templates.
inline RandomSignatures random_signatures(unsigned seed, int count) {
  struct Type {
    const char* spelling;
    std::size_t size;
  };
  static const Type types[] = {
      {"char", 1},         {"short", 2},        {"int", 4},        {"long long", 8},  {"float", 4},
      {"double", 8},       {"float*", 8},       {"const int*", 8}, {"S3", 3},         {"S12", 12},
      {"S16", 16},         {"S40", 40},         {"unsigned char", 1}, {"S6", 6},     {"bool", 1}};
  std::mt19937 gen(seed);
  RandomSignatures out;
  out.source =
      "struct S3 { char c[3]; };\n"
      "struct S6 { short s[3]; };\n"
      "struct S12 { int v[3]; };\n"
      "struct alignas(16) S16 { float v[4]; };\n"
      "struct S40 { double d[5]; };\n"
      "struct Big { int v[1500]; };\n"
      "template <typename T> __global__ void templ(T a, int* out, T b) { out[0] = (int)(a + b); }\n";
  bool big_used = false;
  for (int k = 0; k < count; ++k) {
    RandomKernel rk;
    const int kind = static_cast<int>(gen() % 4);
    if (kind == 3) {  // a template instantiation: (T, int*, T)
      static const Type scalars[] = {{"int", 4}, {"double", 8}, {"short", 2}, {"long long", 8}, {"float", 4}};
      const Type& t = scalars[gen() % 5];
      rk.name = std::string("templ<") + t.spelling + ">";
      rk.expression = rk.name;
      rk.sizes = {t.size, 8, t.size};
      bool seen = false;
      for (const auto& other : out.kernels) seen = seen || other.name == rk.name;
      if (!seen) out.kernels.push_back(rk);
      continue;
    }
    rk.name = "k" + std::to_string(k);
    std::string params;
    const int n = static_cast<int>(gen() % 13);
    for (int i = 0; i < n; ++i) {
      Type t = types[gen() % (sizeof types / sizeof types[0])];
      if (!big_used && gen() % 16 == 0) {
        t = {"Big", 6000};
        big_used = true;
      }
      params += (i ? ", " : "") + std::string(t.spelling) + " p" + std::to_string(i);
      rk.sizes.push_back(t.size);
    }
    if (kind == 0) rk.expression = rk.name;  // C++ linkage: found through its lowered name
    out.source += std::string(kind == 0 ? "" : "extern \"C\" ") + "__global__ void " + rk.name + "(" + params +
                  ") { }\n";
    out.kernels.push_back(rk);
  }
  if (!big_used) {  // always one list past 4 KB
    out.source += "extern \"C\" __global__ void kbig(int a, Big b, float* c) { }\n";
    out.kernels.push_back({"kbig", "", {4, 6000, 8}});
  }
  return out;
}

}  // namespace kjit::test
