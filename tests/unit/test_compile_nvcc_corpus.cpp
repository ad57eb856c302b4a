// Kernel files written for nvcc compile unchanged under kjit (tests/data/nvcc_corpus/: host-only
// includes, names nvcc makes visible without an include, a kernel header that includes
// <cublas_v2.h>, host prototypes, templates instantiated by name, nvcc's flags). Each is compiled
// by kjit and, where the toolkit has nvcc, by `nvcc -cubin` and `nvcc -ptx` with the same flags:
// the kernels' names (mangled: the parameter types too) and their parameter sizes must match.
// Names are compared as nvcc mangles them: int64_t is long under kjit as on the LP64 host (#56).
#include <kjit/kjit.hpp>

#include "core/driver/cubin_info.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/toolkit.hpp"

#include <cxxabi.h>
#include "support/skip.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::filesystem::path k_corpus = std::filesystem::path(KJIT_SOURCE_DIR) / "tests/data/nvcc_corpus";

struct CorpusFile {
  std::string file;
  std::vector<std::string> flags;             // as the user's nvcc build has them
  std::vector<std::string> name_expressions;  // templates kjit is asked to instantiate
};

const std::vector<CorpusFile> k_files = {
    {"gelu_lecture.cu", {"-O3", "-lineinfo"}, {}},
    {"vector_add_host.cu", {"-O2", "-Xcompiler", "-Wall", "--default-stream", "per-thread"}, {}},
    {"vector_add_tutorial.cu", {"-O3"}, {}},
    {"vector_add_main.cu", {"-O2"}, {}},
    {"softmax_llmc.cu", {"--use_fast_math", "-gencode", "arch=compute_90,code=sm_90"}, {}},
    {"scale_cublas_types.cu", {"-Iinclude", "-lcublas"}, {}},
    {"templated_reduce.cu", {"--expt-relaxed-constexpr", "-std=c++17"}, {"block_max<float, 128>", "block_max<int, 256>"}},
    {"sgemm_relaxed_constexpr.cu", {"--expt-relaxed-constexpr", "-res-usage", "-arch=sm_90"}, {}},
    {"lambda_transform.cu", {"--extended-lambda", "-Xptxas", "-v"}, {}},
    {"rng_types.cu", {"-g", "-Xcompiler", "-Wextra,-fPIC", "-lineinfo"}, {}},
};

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// ".entry NAME(" of each kernel in a PTX text, with its parameters' declarations.
std::map<std::string, std::vector<std::string>> entries(const std::string& ptx) {
  std::map<std::string, std::vector<std::string>> out;
  for (std::size_t p = ptx.find(".entry "); p != std::string::npos; p = ptx.find(".entry ", p + 1)) {
    const std::size_t open = ptx.find('(', p);
    const std::string name = ptx.substr(p + 7, open - p - 7);
    const std::size_t close = ptx.find(')', open);
    std::vector<std::string> params;
    std::istringstream lines(ptx.substr(open + 1, close - open - 1));
    for (std::string line; std::getline(lines, line);) {
      const std::size_t param = line.find(".param ");
      if (param == std::string::npos) continue;
      std::string decl = line.substr(param);
      const std::size_t last_space = decl.rfind(' ');
      params.push_back(decl.substr(0, last_space));  // ".param .u64 .ptr .align 1", without the name
    }
    out[name] = params;
  }
  return out;
}

// The demangled name (mangled ones differ where the types do).
std::string comparable(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : mangled;
  std::free(d);
  return name;
}

std::map<std::string, std::vector<std::string>> comparable(const std::map<std::string, std::vector<std::string>>& e) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [name, params] : e) out[comparable(name)] = params;
  return out;
}

// nvcc's flags as a shell command line.
std::string shell_flags(const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& f : flags) out += " '" + f + "'";
  return out;
}

}  // namespace

TEST_SUITE("nvcc_corpus") {
  TEST_CASE("every kernel file written for nvcc compiles unchanged, with the kernels nvcc makes") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::filesystem::path nvcc = kjit::test::toolkit_file("bin/nvcc");
    const bool have_nvcc = std::filesystem::exists(nvcc);
    if (!have_nvcc) MESSAGE("no nvcc in this toolkit: kjit's compiles only, nothing compared");
    for (const auto& c : k_files) {
      INFO(c.file, shell_flags(c.flags));
      kjit::Program program(c.file, read(k_corpus / c.file));
      program.directory(k_corpus).include_path({k_corpus / "include"});
      for (const auto& e : c.name_expressions) program.instantiate(e);
      std::vector<std::string> flags;
      for (const auto& f : c.flags) flags.push_back(f == "-Iinclude" ? "-I" + (k_corpus / "include").string() : f);
      kjit::CompileResult r;
      REQUIRE_NOTHROW(r = rt.compile(program, {.arch = kjit::Arch::sm(90), .flags = flags}));
      const auto ours = entries(r.ptx);
      REQUIRE_FALSE(ours.empty());
      for (const auto& e : c.name_expressions) {
        const auto lowered = std::find_if(r.lowered_names.begin(), r.lowered_names.end(),
                                          [&](const auto& l) { return l.first == e; });
        REQUIRE(lowered != r.lowered_names.end());
        CHECK(ours.count(lowered->second) == 1);
      }
      if (!have_nvcc) continue;
      const auto out = dir / c.file;
      const std::string common = fmt::format("cd '{}' && '{}' -arch=sm_90{} ", k_corpus.string(), nvcc.string(), shell_flags(c.flags));
      const auto cubin = kjit::test::run_command(common + fmt::format("-cubin -o '{}.cubin' {} 2>&1", out.string(), c.file));
      REQUIRE_MESSAGE(cubin.code == 0, cubin.out);
      const auto ptx = kjit::test::run_command(common + fmt::format("-ptx -o '{}.ptx' {} 2>&1", out.string(), c.file));
      REQUIRE_MESSAGE(ptx.code == 0, ptx.out);
      const auto theirs = entries(read(out.string() + ".ptx"));
      CHECK(comparable(ours) == comparable(theirs));
      const std::string their_cubin = read(out.string() + ".cubin");
      for (const auto& [name, params] : ours) {
        INFO(name);
        const auto nvcc_name = std::find_if(theirs.begin(), theirs.end(), [&](const auto& t) { return comparable(t.first) == comparable(name); });
        REQUIRE(nvcc_name != theirs.end());
        const auto sizes = kjit::driver::cubin_param_sizes(r.cubin, name);
        const auto nvcc_sizes = kjit::driver::cubin_param_sizes(their_cubin, nvcc_name->first);
        REQUIRE(sizes.has_value());
        REQUIRE(nvcc_sizes.has_value());
        CHECK(*sizes == *nvcc_sizes);
        CHECK(sizes->size() == params.size());
      }
    }
  }

  // #52 item 11: docs/headers.md said nvcc makes FLT_MAX visible without an include; nvcc 13.0
  // says `identifier "FLT_MAX" is undefined`. kjit adds it, and the page says so.
  TEST_CASE("what kjit adds beyond nvcc: FLT_MAX without an include as docs/headers.md says") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = "__global__ void k(float* x) { x[threadIdx.x] = FLT_MAX - FLT_EPSILON; }\n";
    CHECK_NOTHROW(rt.compile(kjit::Program("flt.cu", src), {.arch = kjit::Arch::sm(90)}));
    const std::string doc = read(std::filesystem::path(KJIT_SOURCE_DIR) / "docs/headers.md");
    const std::size_t row = doc.find("| `FLT_MAX`, `FLT_EPSILON`");
    REQUIRE(row != std::string::npos);
    const std::string line = doc.substr(row, doc.find('\n', row) - row);
    CHECK_MESSAGE(line.find("not visible") != std::string::npos, line);
    CHECK_MESSAGE(line.find("kjit adds them") != std::string::npos, line);
    const std::filesystem::path nvcc = kjit::test::toolkit_file("bin/nvcc");
    if (!std::filesystem::exists(nvcc)) KJIT_SKIP("no nvcc at " << nvcc.string() << " to compare with");
    kjit::test::write_file(dir / "flt.cu", src);
    const auto r = kjit::test::run_command(fmt::format("cd '{}' && '{}' -arch=sm_90 -c -o flt.o flt.cu 2>&1",
                                                       dir.path().string(), nvcc.string()));
    CHECK(r.code != 0);
    CHECK_MESSAGE(r.out.find("\"FLT_MAX\" is undefined") != std::string::npos, r.out);
  }
}
