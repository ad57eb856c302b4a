// The shipped kernels_src compiles without a GPU, and its kjit.json instantiates every kernel
// kjit::kernels::Kernels<T> looks up (NVRTC gives each a lowered name), for each element type.
#include <kjit/kernels.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>
#include <kjit/tune.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <map>

namespace {

template <class T>
void check_instantiated(kjit::KernelLoader& loader, std::map<std::string, kjit::CompileResult>& compiled) {
  for (const auto& [file, name] : kjit::kernels::Kernels<T>::instantiations()) {
    auto it = compiled.find(file);
    if (it == compiled.end()) it = compiled.emplace(file, loader.compile(file, {}, kjit::Arch::sm(90))).first;
    INFO(file, ": ", name);
    auto lowered = it->second.lowered_name(name);
    REQUIRE(lowered.has_value());
    CHECK(!lowered->empty());
    CHECK(it->second.ptx.find(*lowered) != std::string::npos);  // the kernel is in the PTX
    CHECK(!it->second.cubin.empty());
  }
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("kernels: kjit.json instantiates every lecture kernel for float and half and bfloat16") {
    kjit::test::TempDir dir;
    kjit::RuntimeConfig config;
    config.cache_dir = dir.path() / "cache";
    config.log = [](kjit::LogLevel, std::string_view) {};
    kjit::Runtime runtime(config);
    kjit::KernelLoader loader({.use_environment = false}, runtime);
    std::map<std::string, kjit::CompileResult> compiled;
    check_instantiated<float>(loader, compiled);
    check_instantiated<kjit::half>(loader, compiled);
    check_instantiated<kjit::bfloat16>(loader, compiled);
    CHECK(compiled.size() == 4);
  }

  TEST_CASE("kernels: the shipped square and gelu have a tuning entry whose candidates compile") {
    kjit::test::TempDir dir;
    kjit::RuntimeConfig config;
    config.cache_dir = dir.path() / "cache";
    config.log = [](kjit::LogLevel, std::string_view) {};
    kjit::Runtime runtime(config);
    const std::string shipped = std::string(KJIT_SOURCE_DIR) + "/kernels_src";
    const auto manifest = kjit::Manifest::read(shipped);
    for (const char* file : {"square.cu", "gelu.cu"}) {
      INFO(file);
      const kjit::ManifestKernel* kernel = manifest.find(file);
      REQUIRE(kernel != nullptr);
      REQUIRE(kernel->tuning.size() == 1);
      const kjit::TuneSpec& spec = kernel->tuning.front();
      CHECK(spec.candidates.size() >= 2);
      CHECK_FALSE(spec.shapes.empty());  // `kjit tune` decides these on a GPU
      kjit::Program program = kjit::read_program(shipped + "/" + file);
      for (const auto& c : spec.candidates) program.instantiate(c.kernel);
      const kjit::CompileResult r = runtime.compile(program, {.arch = kjit::Arch::sm(90)});
      for (const auto& c : spec.candidates) CHECK_MESSAGE(r.lowered_name(c.kernel).has_value(), c.kernel);
    }
  }
}
