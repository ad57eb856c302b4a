// Runtime::link: programs compiled as relocatable code and prebuilt device code (cubin, PTX,
// LTO-IR, fatbin, libcudadevrt.a) linked by nvJitLink to sm_90 without a GPU; the link's key
// covers every input; a linked result is a cache hit in a fresh Runtime; refused links say why
// and name the inputs.
#include <kjit/tools.hpp>

#include "core/driver/cubin_info.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/toolkit.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <set>
#include <string>

namespace {

using kjit::Arch;
using kjit::CompileOptions;
using kjit::Link;
using kjit::Program;

const CompileOptions k_sm90{.arch = Arch::sm(90)};

// A kernel in one file calling a function defined in another.
Program caller() {
  return Program("caller.cu",
                 "extern __device__ float twice(float v);\n"
                 "extern \"C\" __global__ void apply(float* x, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "  if (i < n) x[i] = twice(x[i]) + 1.0f;\n"
                 "}\n"
                 "template <class T> __global__ void axpy(T a, T* x, int n) {\n"
                 "  int i = threadIdx.x; if (i < n) x[i] = T(twice(float(a))) * x[i];\n"
                 "}\n")
      .instantiate("axpy<float>");
}
Program callee(float factor = 2.0f) {
  return Program("callee.cu", fmt::format("__device__ float twice(float v) {{ return {:.1f}f * v; }}\n", factor));
}

bool has_kernel(const std::string& cubin, const std::string& symbol) {
  return kjit::driver::cubin_param_sizes(cubin, symbol).has_value();
}

}  // namespace

TEST_SUITE("link") {
  TEST_CASE("two relocatable programs link into one cubin and the link is then a hit") {
    kjit::test::TempDir dir;
    std::string key;
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
      kjit::CompileResult r = rt.link(Link("pair").add(caller()).add(callee()), k_sm90);
      CHECK(r.outcome == kjit::Outcome::compiled);
      CHECK(r.arch == Arch::sm(90));
      CHECK(r.key.size() == 32);
      CHECK(has_kernel(r.cubin, "apply"));
      REQUIRE(r.lowered_name("axpy<float>"));
      CHECK(has_kernel(r.cubin, *r.lowered_name("axpy<float>")));
      CHECK(rt.stats().compiles == 3);  // two parts, one link
      key = r.key;
      CHECK(rt.link(Link("pair").add(caller()).add(callee()), k_sm90).outcome == kjit::Outcome::hit);
    }
    // A fresh process: the link's key is computed without compiling anything, and hits.
    kjit::Runtime fresh(kjit::test::quiet_config(dir / "cache"));
    kjit::CompileResult again = fresh.link(Link("pair").add(caller()).add(callee()), k_sm90);
    CHECK(again.outcome == kjit::Outcome::hit);
    CHECK(again.key == key);
    CHECK(has_kernel(again.cubin, "apply"));
    CHECK(again.lowered_name("axpy<float>"));
    CHECK(fresh.stats().compiles == 0);
    CHECK(fresh.stats().misses == 0);
  }

  TEST_CASE("the key changes when any input or option changes") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string blob(64, 'x');
    auto key = [&](const Link& l, const CompileOptions& o = k_sm90) {
      return rt.link(l, o).key;
    };
    // Each variant is linkable; every one must have a key of its own.
    kjit::CompileResult b_rdc = rt.compile(callee(), {.arch = Arch::sm(90), .flags = {"-rdc=true"}});
    kjit::CompileResult b_rdc3 = rt.compile(callee(3.0f), {.arch = Arch::sm(90), .flags = {"-rdc=true"}});
    std::set<std::string> keys;
    keys.insert(key(Link("k").add(caller()).add(callee())));
    keys.insert(key(Link("k").add(caller()).add(callee(3.0f))));                         // a program's source
    keys.insert(key(Link("k2").add(caller()).add(callee())));                            // the link's name
    keys.insert(key(Link("k").add(caller()).add(callee()).lto()));                       // LTO
    keys.insert(key(Link("k").add(caller()).add(callee()).option("-O3")));               // an nvJitLink option
    keys.insert(key(Link("k").add(caller()).add(callee()), {.arch = Arch::sm(90), .defines = {"X=1"}}));  // part options
    keys.insert(key(Link("k").add(caller()).add(callee()), {.arch = Arch::sm(80)}));     // the arch
    keys.insert(key(Link("k").add(caller()).add_data(Link::InputKind::cubin, "b.cubin", b_rdc.cubin)));
    keys.insert(key(Link("k").add(caller()).add_data(Link::InputKind::cubin, "b.cubin", b_rdc3.cubin)));  // its bytes
    keys.insert(key(Link("k").add(caller()).add_data(Link::InputKind::cubin, "c.cubin", b_rdc.cubin)));   // its name
    keys.insert(key(Link("k").add(caller()).add_data(Link::InputKind::ptx, "b.cubin", b_rdc.ptx)));      // its kind
    CHECK(keys.size() == 11);
    // The same link spelled again (a raw -rdc flag included) is the same key.
    CHECK(key(Link("k").add(caller()).add(callee())) ==
          key(Link("k").add(caller()).add(callee()), {.arch = Arch::sm(90), .flags = {"--relocatable-device-code=true"}}));
  }

  TEST_CASE("prebuilt cubin PTX LTO-IR and fatbin inputs link to sm_90 without a GPU") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const CompileOptions rdc{.arch = Arch::sm(90), .flags = {"-rdc=true"}};
    kjit::CompileResult a = rt.compile(caller(), rdc);
    kjit::CompileResult b = rt.compile(callee(), rdc);
    REQUIRE(a.has_cubin());
    REQUIRE(!b.ptx.empty());
    SUBCASE("cubin and PTX") {
      auto r = rt.link(Link("mixed").add_data(Link::InputKind::cubin, "caller.cubin", a.cubin)
                                    .add_data(Link::InputKind::ptx, "callee.ptx", b.ptx), k_sm90);
      CHECK(has_kernel(r.cubin, "apply"));
    }
    SUBCASE("a program and a cubin file") {
      kjit::test::write_file(dir / "callee.cubin", b.cubin);
      auto r = rt.link(Link("file").add(caller()).add_file(dir / "callee.cubin"), k_sm90);
      CHECK(has_kernel(r.cubin, "apply"));
    }
    SUBCASE("LTO-IR") {
      const CompileOptions dlto{.arch = Arch::sm(90), .flags = {"-rdc=true", "-dlto"}};
      kjit::CompileResult la = rt.compile(caller(), dlto);
      kjit::CompileResult lb = rt.compile(callee(), dlto);
      REQUIRE(!la.ltoir.empty());
      CHECK(la.cubin.empty());
      auto r = rt.link(Link("ir").lto().add_data(Link::InputKind::ltoir, "caller.ltoir", la.ltoir)
                                 .add_data(Link::InputKind::ltoir, "callee.ltoir", lb.ltoir), k_sm90);
      CHECK(has_kernel(r.cubin, "apply"));
      // An LTO-IR entry comes back from the disk cache as it went in.
      kjit::Runtime fresh(kjit::test::quiet_config(dir / "cache"));
      kjit::CompileResult hit = fresh.compile(callee(), dlto);
      CHECK(hit.outcome == kjit::Outcome::hit);
      CHECK(hit.ltoir == lb.ltoir);
      // Programs under lto(): compiled to LTO-IR and linked with -lto.
      auto p = rt.link(Link("lto").lto().add(caller()).add(callee()), k_sm90);
      CHECK(has_kernel(p.cubin, "apply"));
    }
    SUBCASE("fatbin made by the toolkit's fatbinary") {
      kjit::test::write_file(dir / "callee.cubin", b.cubin);
      const std::string fatbin = (dir / "callee.fatbin").string();
      const std::string cmd = fmt::format("{} --create={} --image3=kind=elf,sm=90,file={} 2>&1",
                                          kjit::test::toolkit_file("bin/fatbinary").string(), fatbin,
                                          (dir / "callee.cubin").string());
      auto made = kjit::test::run_command(cmd);
      REQUIRE_MESSAGE(made.code == 0, made.out);
      auto r = rt.link(Link("fat").add(caller()).add_file(fatbin), k_sm90);
      CHECK(has_kernel(r.cubin, "apply"));
    }
  }

  TEST_CASE("a device-side launch links against libcudadevrt.a named or added by kjit") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    Program parent("parent.cu",
                   "__global__ void child(int* x) { x[threadIdx.x] += 1; }\n"
                   "extern \"C\" __global__ void parent(int* x) { child<<<1, 32>>>(x); }\n");
    const std::filesystem::path devrt = kjit::test::toolkit_file("lib64/libcudadevrt.a");
    auto r = rt.link(Link("cdp").add(parent).add_file(devrt), k_sm90);
    CHECK(has_kernel(r.cubin, "parent"));
    // #57 item 18: without it, kjit adds the toolkit's, as CuPy does: the same kernels.
    auto added = rt.link(Link("cdp-without-devrt").add(parent), k_sm90);
    CHECK(has_kernel(added.cubin, "parent"));
    // Prebuilt code that launches from the device (kjit does not read it) and no device runtime:
    // nvJitLink's undefined names, and a kjit line naming libcudadevrt.a.
    const kjit::CompileResult rdc = rt.compile(parent, {.arch = Arch::sm(90), .flags = {"-rdc=true"}});
    try {
      rt.link(Link("cdp-prebuilt").add_data(Link::InputKind::ptx, "parent.ptx", rdc.ptx), k_sm90);
      FAIL("linked without libcudadevrt.a");
    } catch (const kjit::LinkError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("__cudaCDP2") != std::string::npos);
      CHECK(what.find("kjit: an input launches kernels from the device") != std::string::npos);
      CHECK(what.find("libcudadevrt.a") != std::string::npos);
    }
  }

  TEST_CASE("a refused link says why and names its inputs") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    try {
      rt.link(Link("lonely").add(caller()), k_sm90);
      FAIL("linked with an undefined function");
    } catch (const kjit::LinkError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("linking lonely for sm_90 with nvJitLink") != std::string::npos);
      CHECK(what.find("_Z5twicef") != std::string::npos);     // the undefined symbol
      CHECK(what.find("program caller.cu") != std::string::npos);  // the inputs
      CHECK(e.link() == "lonely");
      CHECK(e.log().find("Undefined reference") != std::string::npos);
      REQUIRE(e.inputs().size() == 1);
    }
    kjit::CompileResult ir = rt.compile(callee(), {.arch = Arch::sm(90), .flags = {"-rdc=true", "-dlto"}});
    CHECK_THROWS_AS(rt.link(Link("no-lto").add(caller()).add_data(Link::InputKind::ltoir, "callee.ltoir", ir.ltoir),
                            k_sm90),
                    kjit::LinkError);
    // A refused link leaves nothing in the cache under its key: the next try links again.
    CHECK_THROWS_AS(rt.link(Link("lonely").add(caller()), k_sm90), kjit::LinkError);
  }

  TEST_CASE("bad link requests are usage errors") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    CHECK_THROWS_WITH_AS(rt.link(Link("v").add(callee()), {.arch = Arch::compute(90)}),
                         doctest::Contains("is virtual"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(rt.link(Link("empty"), k_sm90), doctest::Contains("no inputs"), kjit::UsageError);
    kjit::test::write_file(dir / "notes.txt", "x");
    CHECK_THROWS_WITH_AS(Link("t").add_file(dir / "notes.txt"), doctest::Contains(".cubin, .ptx"), kjit::UsageError);
    CHECK_THROWS_AS(Link("t").add_file(dir / "missing.cubin"), kjit::IoError);
    CHECK(kjit::link_input_kind("x/libcudadevrt.a") == Link::InputKind::library);
    CHECK(kjit::to_string(Link::InputKind::ltoir) == "ltoir");
  }
}
