// driver::cubin_param_sizes: parameter sizes read from NVRTC's own cubins, for random
// signatures and several archs; anything that is not such a cubin gives nullopt, never a crash.
#include "core/driver/cubin_info.hpp"
#include "support/helpers.hpp"
#include "support/random_signatures.hpp"
#include "support/temp_dir.hpp"

#include <kjit/tools.hpp>

#include <doctest/doctest.h>

#include <random>

namespace {

kjit::CompileResult compile_for(const kjit::Program& program, const char* arch) {
  kjit::RuntimeConfig c;
  c.cache_disabled = true;
  c.log = [](kjit::LogLevel, std::string_view) {};
  kjit::Runtime rt(c);
  return rt.compile(program, {.arch = kjit::Arch::parse(arch)});
}

std::string symbol_of(const kjit::CompileResult& r, const std::string& name) {
  return r.lowered_name(name).value_or(name);
}

}  // namespace

TEST_SUITE("driver::cubin_param_sizes") {
  TEST_CASE("driver::cubin_param_sizes: random signatures read back exactly on sm_90 and sm_80 and sm_120") {
    for (const char* arch : {"sm_90", "sm_80", "sm_120"}) {
      for (unsigned seed : {11u, 12u}) {
        auto sigs = kjit::test::random_signatures(seed * 7919u + arch[3], 24);
        auto r = compile_for(sigs.program("random_sigs.cu"), arch);
        REQUIRE(r.has_cubin());
        for (const auto& k : sigs.kernels) {
          std::string arch_name = arch;
          CAPTURE(arch_name);
          CAPTURE(k.sizes.size());
          CAPTURE(k.name);
          auto sizes = kjit::driver::cubin_param_sizes(r.cubin, symbol_of(r, k.name));
          REQUIRE(sizes.has_value());
          CHECK(*sizes == k.sizes);
        }
      }
    }
  }

  TEST_CASE("driver::cubin_param_sizes: a kernel name of 700 characters reads back too") {
    const std::string name = "k" + std::string(700, 'x');
    auto r = compile_for(kjit::Program("long.cu", "extern \"C\" __global__ void " + name +
                                                      "(double a, const char* b, short c) { }\n"),
                         "sm_90");
    auto sizes = kjit::driver::cubin_param_sizes(r.cubin, name);
    REQUIRE(sizes.has_value());
    CHECK(*sizes == std::vector<std::size_t>{8, 8, 2});
  }

  TEST_CASE("driver::cubin_param_sizes: an unknown symbol or an image that is not a cubin gives nullopt") {
    auto sigs = kjit::test::random_signatures(5, 6);
    auto r = compile_for(sigs.program("s.cu"), "sm_90");
    CHECK_FALSE(kjit::driver::cubin_param_sizes(r.cubin, "no_such_kernel"));
    CHECK_FALSE(kjit::driver::cubin_param_sizes(r.cubin, ""));
    CHECK_FALSE(kjit::driver::cubin_param_sizes(r.ptx, symbol_of(r, sigs.kernels[0].name)));
    CHECK_FALSE(kjit::driver::cubin_param_sizes("", "k0"));
    CHECK_FALSE(kjit::driver::cubin_param_sizes(std::string(300, '\x7f'), "k0"));
    // A name that is only a prefix of a real section's name.
    const std::string sym = symbol_of(r, sigs.kernels[0].name);
    CHECK_FALSE(kjit::driver::cubin_param_sizes(r.cubin, sym.substr(0, sym.size() - 1)));
  }

  TEST_CASE("driver::cubin_param_sizes: truncated and scrambled cubins never read out of bounds") {
    // Runs under the sanitizer builds too. Every answer must be nullopt or a list of nonzero sizes.
    auto sigs = kjit::test::random_signatures(9, 8);
    auto r = compile_for(sigs.program("s.cu"), "sm_90");
    std::mt19937 gen(1234);
    int answered = 0;
    for (int round = 0; round < 3000; ++round) {
      std::string image = r.cubin;
      if (round % 3 == 0) {
        image.resize(gen() % image.size());
      } else {
        for (int flips = 1 + static_cast<int>(gen() % 8); flips > 0; --flips) {
          image[gen() % image.size()] = static_cast<char>(gen());
        }
      }
      const auto& k = sigs.kernels[gen() % sigs.kernels.size()];
      if (auto sizes = kjit::driver::cubin_param_sizes(image, symbol_of(r, k.name))) {
        ++answered;
        for (std::size_t s : *sizes) CHECK(s > 0);
      }
    }
    CHECK(answered > 0);  // most scrambles miss the few bytes that matter
  }
}
