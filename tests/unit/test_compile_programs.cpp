// Whole programs written for nvcc compile unchanged under kjit (#56): tests/data/programs/, each a
// whole .cu file with main() and the project headers it includes, in the shapes of public projects
// (a samples project's Common/ helpers, llm.c's dev/cuda programs, CUB's and Thrust's examples, a
// Hopper GEMM with clusters, the programming guide's PDL example, an MNIST MLP, a PyTorch
// extension's kernel file), written here, with their projects' nvcc flags. Each is compiled by kjit
// for sm_90 (sm_90a) on the CPU; the cubin's entry points (mangled names) must be nvcc's, which
// manifest.json records and, where the toolkit has nvcc, `nvcc -cubin` confirms. The entries kjit
// is expected to lack (instances only host code can make: a host template's launch, CUB's and
// Thrust's device-wide algorithms) are listed there, and kjit's log must name them.
#include <kjit/kjit.hpp>

#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/toolkit.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::filesystem::path k_programs = std::filesystem::path(KJIT_SOURCE_DIR) / "tests/data/programs";

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

nlohmann::json program_entry(const std::string& file) {
  const auto manifest = nlohmann::json::parse(read(k_programs / "manifest.json"));
  for (const auto& p : manifest["programs"]) {
    if (p["file"] == file) return p;
  }
  FAIL("no program " << file << " in manifest.json");
  return {};
}

// The kernels of a cubin: its FUNC symbols marked as entries (STO_CUDA_ENTRY), read by readelf.
std::set<std::string> cubin_entries(const std::filesystem::path& cubin) {
  const auto r = kjit::test::run_command(fmt::format("readelf -sW '{}' 2>&1", cubin.string()));
  REQUIRE_MESSAGE(r.code == 0, r.out);
  std::set<std::string> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" FUNC ") == std::string::npos || line.find("[<other>: 10]") == std::string::npos) continue;
    out.insert(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

std::string shell_flags(const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& f : flags) out += " '" + f + "'";
  return out;
}

// Compiles one program as its project builds it and checks its kernels against nvcc's.
void check_program(const std::string& file) {
  const nlohmann::json p = program_entry(file);
  const std::filesystem::path path = k_programs / file;
  const std::filesystem::path dir = path.parent_path();
  const std::vector<std::string> flags = p["flags"].get<std::vector<std::string>>();
  const std::string arch = p["arch"].get<std::string>();
  const std::set<std::string> nvcc_entries = p["nvcc_entries"].get<std::set<std::string>>();
  const std::set<std::string> missing = p["expect_missing"].get<std::set<std::string>>();
  INFO(file, shell_flags(flags));
  kjit::test::TempDir tmp;
  // The manifest is nvcc's word where nvcc is here.
  const std::filesystem::path nvcc = kjit::test::toolkit_file("bin/nvcc");
  if (std::filesystem::exists(nvcc)) {
    const auto r = kjit::test::run_command(fmt::format("cd '{}' && '{}' -cubin -arch={}{} '{}' -o '{}' 2>&1", dir.string(),
                                                       nvcc.string(), arch, shell_flags(flags), path.filename().string(),
                                                       (tmp / "nvcc.cubin").string()));
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(cubin_entries(tmp / "nvcc.cubin") == nvcc_entries);
  } else {
    MESSAGE("no nvcc in this toolkit: kjit's kernels against manifest.json's record of nvcc's");
  }
  // kjit, as the project's build would call nvcc: its flags, its include folders, the file's folder.
  std::vector<std::string> kjit_flags;
  for (const auto& f : flags) {
    kjit_flags.push_back(f.starts_with("-I") && !f.starts_with("-I/") ? "-I" + (dir / f.substr(2)).lexically_normal().string() : f);
  }
  kjit::Runtime rt(kjit::test::quiet_config(tmp / "cache"));
  kjit::Program program(path.filename().string(), read(path));
  program.directory(dir);
  const kjit::Arch target = arch == "sm_90a" ? kjit::Arch::parse("sm_90a") : kjit::Arch::sm(90);
  kjit::CompileResult r;
  try {
    r = rt.compile(program, {.arch = target, .flags = kjit_flags});
  } catch (const kjit::CompileError& e) {
    FAIL_CHECK(e.log());
    return;
  }
  CAPTURE(r.log);
  {
    std::ofstream out(tmp / "kjit.cubin", std::ios::binary);
    out.write(r.cubin.data(), static_cast<std::streamsize>(r.cubin.size()));
  }
  std::set<std::string> expected;
  std::set_difference(nvcc_entries.begin(), nvcc_entries.end(), missing.begin(), missing.end(),
                      std::inserter(expected, expected.end()));
  CHECK(cubin_entries(tmp / "kjit.cubin") == expected);
  // What kjit could not compile is named in its log.
  if (!missing.empty() && p.value("warned", true)) CHECK(r.log.find("kjit: warning:") != std::string::npos);
}

// nvcc -rdc=true names a static kernel __nv_static_<N>_<N characters: the file's hash and name>_<mangled>, a
// prefix of its translation unit that no other compiler gives; the kernel is the mangled name after it.
std::string without_static_prefix(const std::string& name) {
  constexpr std::string_view prefix = "__nv_static_";
  if (!name.starts_with(prefix)) return name;
  std::size_t at = prefix.size(), n = 0;
  const std::size_t digits = at;
  while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]))) n = n * 10 + static_cast<std::size_t>(name[at++] - '0');
  if (at == digits || at + 1 + n + 1 > name.size()) return name;
  return name.substr(at + 1 + n + 1);
}

// The kernel's own name in a mangled name: the last <length><identifier> of its (nested) name
// ("_Z10testKernelIfEvPT_S1_" -> "testKernel", "_ZN3cub6detail11EmptyKernelIvEEvv" -> "EmptyKernel").
std::string kernel_identifier(const std::string& mangled) {
  std::size_t at = mangled.starts_with("_ZN") ? 3 : mangled.starts_with("_Z") ? 2 : std::string::npos;
  std::string last;
  while (at != std::string::npos && at < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[at]))) {
    std::size_t n = 0;
    while (at < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[at]))) n = n * 10 + static_cast<std::size_t>(mangled[at++] - '0');
    last = mangled.substr(at, n);
    at += n;
  }
  return last;
}

const std::filesystem::path k_corpus = std::filesystem::path(KJIT_SOURCE_DIR) / "tests/data/corpus";

// PTX with the names NVRTC gives an internal-linkage entity's scope under -rdc written alike:
// `_ZN49_INTERNAL_00000000_12_matrixMul_cu_c0a05233_3215521...` carries the compiling process's id
// (32155 here), so two compiles of one program in two processes differ there and only there.
// The debug sections (-lineinfo's strings, the same names as bytes) are left out.
std::string without_internal_scopes(std::string ptx) {
  if (const std::size_t debug = ptx.find(".section\t.debug_"); debug != std::string::npos) ptx.resize(debug);
  if (const std::size_t debug = ptx.find(".section .debug_"); debug != std::string::npos) ptx.resize(debug);
  constexpr std::string_view marker = "_INTERNAL_";
  for (std::size_t at = ptx.find(marker); at != std::string::npos; at = ptx.find(marker, at + 1)) {
    std::size_t digits = at;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(ptx[digits - 1]))) --digits;
    if (digits == at) continue;  // not a mangled name's length-prefixed part
    const std::size_t length = std::stoul(ptx.substr(digits, at - digits));
    if (at + length > ptx.size()) continue;
    ptx.replace(digits, at - digits + length, "10_INTERNAL_");
    at = digits + 2;  // the replacement's own marker: searched on after it
  }
  return ptx;
}


// The corpus of real programs (tests/data/corpus, scripts/corpus.py): every program of one
// repository's folder compiled by kjit as its project builds it with nvcc; its cubin's entry points
// must be those nvcc gave it (manifest.json, written by `scripts/corpus.py add` from `nvcc -cubin`).
// A program kjit is known to fail keeps its place with "expect_error" (a word of the log) and
// "why"; one that lacks instances only host code makes lists them in "expect_missing", and kjit's
// log must name each with its --instantiate line. A known failure that starts to pass fails here
// too, so that the count in docs/headers.md stays true.
void check_corpus(const std::string& folder) {
  const auto manifest = nlohmann::json::parse(read(k_corpus / "manifest.json"));
  kjit::test::TempDir tmp;
  // The debug log's line for each compile says which NVRTC call the fast path chose.
  std::string how;
  kjit::RuntimeConfig config = kjit::test::quiet_config(tmp / "cache");
  config.log_level = kjit::LogLevel::debug;
  config.log = [&how](kjit::LogLevel, std::string_view message) {
    if (message.starts_with("compiled program ")) how = std::string(message);
  };
  kjit::Runtime rt(config);
  // The fast path's decision (whether NVRTC's minimal front end may compile a program) against
  // the compiler over the same real files: each program the fast path compiled otherwise (with
  // --minimal, or without the nvcc environment's pre-include) is compiled with it off too and must
  // give the same PTX, so that the fast path never changes what a program means. One it left to
  // the full front end with the environment was compiled by the very call the fast path off makes.
  kjit::RuntimeConfig full_config = kjit::test::quiet_config(tmp / "full");
  full_config.nvrtc_fast = false;
  kjit::Runtime full(full_config);
  int count = 0;
  int fast_compiles = 0;  // programs the fast path compiled otherwise than the full call
  for (const auto& p : manifest["programs"]) {
    const std::string file = p["file"].get<std::string>();
    if (!file.starts_with(folder + "/")) continue;
    ++count;
    const std::filesystem::path path = k_corpus / file;
    const std::filesystem::path dir = path.parent_path();
    const std::vector<std::string> flags = p["flags"].get<std::vector<std::string>>();
    INFO(file, shell_flags(flags));
    std::vector<std::string> kjit_flags;
    for (const auto& f : flags) {
      kjit_flags.push_back(f.starts_with("-I") && !f.starts_with("-I/") ? "-I" + (dir / f.substr(2)).lexically_normal().string() : f);
    }
    kjit::Program program(path.filename().string(), read(path));
    program.directory(dir);
    const kjit::Arch target = kjit::Arch::parse(p["arch"].get<std::string>());
    kjit::CompileResult r;
    how.clear();
    try {
      r = rt.compile(program, {.arch = target, .flags = kjit_flags});
    } catch (const kjit::CompileError& e) {
      if (p.contains("expect_error")) {
        CHECK_MESSAGE(e.log().find(p["expect_error"].get<std::string>()) != std::string::npos, e.log());
      } else {
        FAIL_CHECK(e.log());
      }
      continue;
    }
    CHECK_MESSAGE(!p.contains("expect_error"), "compiles now: take its expect_error out of manifest.json and count it");
    CAPTURE(r.log);
    REQUIRE_MESSAGE(!how.empty(), "no debug line for the compile");
    if (how.find("--minimal") != std::string::npos || how.find("without the nvcc environment") != std::string::npos) {
      ++fast_compiles;
      CHECK_MESSAGE(without_internal_scopes(full.compile(program, {.arch = target, .flags = kjit_flags}).ptx) ==
                        without_internal_scopes(r.ptx),
                    "the fast path off compiles other PTX");
    }
    {
      std::ofstream out(tmp / "kjit.cubin", std::ios::binary | std::ios::trunc);
      out.write(r.cubin.data(), static_cast<std::streamsize>(r.cubin.size()));
    }
    std::set<std::string> nvcc_entries;
    for (const auto& e : p["nvcc_entries"]) nvcc_entries.insert(without_static_prefix(e.get<std::string>()));
    const std::set<std::string> missing = p.value("expect_missing", std::set<std::string>{});
    std::set<std::string> expected;
    std::set_difference(nvcc_entries.begin(), nvcc_entries.end(), missing.begin(), missing.end(),
                        std::inserter(expected, expected.end()));
    CHECK(cubin_entries(tmp / "kjit.cubin") == expected);
    // What kjit could not compile (instances only host code makes) is named in its warning.
    if (p.value("cccl_host_api", false)) {  // Thrust's or CUB's kernels, instantiated by its host API
      CHECK(r.log.find("CCCL's host API") != std::string::npos);
      continue;
    }
    for (const std::string& m : missing) {
      CHECK_MESSAGE(r.log.find("--instantiate '" ) != std::string::npos, m);
      CHECK_MESSAGE(r.log.find(kernel_identifier(m)) != std::string::npos, m);
    }
  }
  CHECK(count > 0);
}

}  // namespace

TEST_SUITE("corpus") {
  TEST_CASE("corpus: NVIDIA/cuda-samples programs with Common/ compile with nvcc's entry points") {
    check_corpus("cuda-samples");
  }
  TEST_CASE("corpus: karpathy/llm.c dev/cuda programs compile with nvcc's entry points") {
    check_corpus("llm.c");
  }
  TEST_CASE("corpus: siboehm/SGEMM_CUDA's runner (template kernels its host functions instantiate) and simplest kernel") {
    check_corpus("SGEMM_CUDA");
  }
}

TEST_SUITE("programs") {
  TEST_CASE("program: a samples vectorAdd with Common/ helpers and host-only system headers") {
    check_program("samples/vectorAdd/vectorAdd.cu");
  }
  TEST_CASE("program: samples simpleTemplates whose host code instantiates a template kernel") {
    check_program("samples/simpleTemplates/simpleTemplates.cu");
  }
  TEST_CASE("program: samples matrixMul with cuda_profiler_api.h and literal block sizes") {
    check_program("samples/matrixMul/matrixMul.cu");
  }
  TEST_CASE("program: programmatic dependent launch as the programming guide writes it") {
    check_program("samples/pdl/pdl.cu");
  }
  TEST_CASE("program: a conditional graph node's kernel with cudaGraphSetConditional") {
    check_program("samples/graphConditional/graphConditional.cu");
  }
  TEST_CASE("program: llm.c-style gelu_forward with common.h's host code and sys/syscall.h") {
    check_program("llmc/dev/gelu_forward.cu");
  }
  TEST_CASE("program: llm.c-style softmax with bits/stdc++.h and host-instantiated templates") {
    check_program("llmc/dev/softmax_forward.cu");
  }
  TEST_CASE("program: host code of every shape around kernels (macro struct constructor variables)") {
    check_program("tutorial/host_code.cu");
  }
  TEST_CASE("program: CUB block reduce with utility and cuda/std/utility together") {
    check_program("cccl/block_reduce.cu");
  }
  TEST_CASE("program: CUB device reduce from host code beside the file's own kernel") {
    check_program("cccl/device_reduce.cu");
  }
  TEST_CASE("program: a Hopper cluster kernel with a launch helper and host setup") {
    check_program("hopper/cluster_gemm.cu");
  }
  TEST_CASE("program: kernels taking int64_t size_t and ptrdiff_t have nvcc's mangled names") {
    check_program("names/int_types.cu");
  }
  TEST_CASE("program: an MNIST MLP with cuRAND cuBLAS and host file reading") {
    check_program("mlp/mnist_mlp.cu");
  }
  TEST_CASE("program: a PyTorch extension's kernel file with its launch wrapper") {
    check_program("torch_ext/add2_kernel.cu");
  }
}
