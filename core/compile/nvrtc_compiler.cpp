#include "core/compile/nvrtc_compiler.hpp"

#include "core/base/source_file.hpp"
#include "core/compile/host_functions.hpp"
#include "core/compile/minimal_front_end.hpp"
#include "core/compile/missing_headers.hpp"
#include "core/compile/nvcc_environment.hpp"
#include "core/compile/include_scanner.hpp"
#include "core/compile/kernel_types.hpp"
#include "core/compile/standard_headers.hpp"
#include "core/compile/template_kernels.hpp"
#include "core/compile/toolkit_headers.hpp"
#include "core/base/toolkit_location.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nvrtc.h>
#include <cxxabi.h>


#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>

namespace kjit::compile {
namespace {

void check_nvrtc(nvrtcResult r, const char* call, const std::string& program) {
  if (r != NVRTC_SUCCESS) [[unlikely]] {
    throw NvrtcError(static_cast<int>(r), fmt::format("compiling program {} with NVRTC: {} failed: {}", program,
                                                      call, nvrtcGetErrorString(r)));
  }
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};

std::vector<std::filesystem::path> find_toolkit_include_dirs() {
  std::error_code ec;
  for (const auto& root : base::toolkit_roots()) {
    const std::filesystem::path dir = root / "include";
    if (std::filesystem::exists(dir / "cuda_runtime.h", ec) || std::filesystem::exists(dir / "cuda_fp16.h", ec)) {
      std::vector<std::filesystem::path> dirs;
      if (std::filesystem::exists(dir / "cccl", ec)) dirs.push_back(dir / "cccl");
      dirs.push_back(dir);
      return dirs;
    }
  }
  return {};  // NVRTC's built-in headers still work
}

}  // namespace

const std::vector<std::filesystem::path>& NvrtcCompiler::toolkit_include_dirs() {
  static const std::vector<std::filesystem::path> dirs = find_toolkit_include_dirs();
  return dirs;
}

std::string NvrtcCompiler::version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);  // no fmt: a cache hit asks for it
}

bool NvrtcCompiler::has_own_cache() {
  static const bool own = [] {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return major > 12 || (major == 12 && minor >= 9);
  }();
  return own;
}

std::vector<int> NvrtcCompiler::supported_archs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

namespace {

// The PCH heap is process-wide and nvrtcSetPCHHeapSize frees it: compiles that may use it hold
// this shared, a resize holds it exclusively.
std::shared_mutex g_pch_heap_mutex;

// Drops NVRTC's PCH messages ("<name>": creating/using precompiled header file "...") from the
// log and says which of the two happened.
PchUse strip_pch_messages(std::string& log) {
  PchUse use = PchUse::none;
  std::string kept;
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t end = log.find('\n', pos);
    std::size_t next = end == std::string::npos ? log.size() : end + 1;
    std::string_view line(log.data() + pos, next - pos);
    if (line.find("precompiled header file \"") != std::string_view::npos && !line.empty() && line[0] == '"') {
      if (line.find("\": creating precompiled header") != std::string_view::npos) use = PchUse::created;
      else if (line.find("\": using precompiled header") != std::string_view::npos && use == PchUse::none) use = PchUse::used;
    } else {
      kept.append(line);
    }
    pos = next;
  }
  log = std::move(kept);
  return use;
}

// What the program can reach by #include: every spelling (from its source, its in-memory
// headers and the user headers found along `dirs`: an over-approximation, as the cache key's scan
// is) and the user headers found.
struct Reach {
  std::set<std::string> spellings;
  std::vector<ScannedHeader> user_headers;
};

Reach reach_of(const Program& program, const std::vector<std::filesystem::path>& dirs) {
  Reach reach;
  auto add_lines = [&reach](const std::string& text) {
    for (auto& [spelling, quoted] : IncludeScanner::include_lines(text)) reach.spellings.insert(std::move(spelling));
  };
  add_lines(program.source());
  std::vector<std::string> in_memory;
  for (const auto& [hname, content] : program.headers()) {
    add_lines(content);
    in_memory.push_back(hname);
  }
  if (!reach.spellings.empty()) {
    IncludeScanner scanner(dirs, std::move(in_memory));
    reach.user_headers = scanner.scan(program.source(), program.directory());
    for (const auto& header : reach.user_headers) add_lines(header.content);
  }
  return reach;
}

// kjit's standard headers (<cstdint>, <cmath>, <vector>, the nvcc environment, ...) and the
// toolkit's API headers the program includes (<cuda.h>, <cublas_v2.h>, ... without their host
// functions), each unless the program has an in-memory header of that name or a user include
// dir (the user's -I, the program's folder and include path, all in `arguments` by now) holds a
// file of that name: the user's header wins. The toolkit's own include folders, named with -I as
// kernels for nvcc often do, are not the user's: their cuda.h is the one kjit's stands for.
Reach add_standard_headers(const Program& program, const std::vector<std::string>& arguments,
                           std::vector<const char*>& names, std::vector<const char*>& sources) {
  std::vector<std::filesystem::path> dirs;
  auto add_user_dir = [&dirs](std::string_view dir) {
    std::error_code ec;
    for (const auto& toolkit : NvrtcCompiler::toolkit_include_dirs()) {
      if (std::filesystem::equivalent(dir, toolkit, ec)) return;
    }
    dirs.emplace_back(dir);
  };
  for (std::string_view a : arguments) {
    if (a.starts_with("--include-path=")) add_user_dir(a.substr(15));
    else if (a.starts_with("-I") && a.size() > 2) add_user_dir(a.substr(2));
  }
  auto add = [&](std::string_view header, std::string_view content) {
    bool shadowed = std::any_of(program.headers().begin(), program.headers().end(),
                                [header](const auto& h) { return h.first == header; });
    std::error_code ec;
    for (std::size_t i = 0; i < dirs.size() && !shadowed; ++i) shadowed = std::filesystem::exists(dirs[i] / header, ec);
    if (shadowed) return;
    names.push_back(header.data());
    sources.push_back(content.data());
  };
  Reach reach = reach_of(program, dirs);
  for (const auto& [header, content] : standard_header_files()) add(header, content);
  for (const auto& [header, content] : toolkit_headers(reach.spellings)) add(header, content);
  return reach;
}

// NVRTC takes C strings: a NUL byte would end the text there, silently.
void check_no_nul_in(const Program& program, const std::vector<std::string>& arguments) {
  const std::string& name = program.name();
  base::check_no_nul(program.source(), "the source of program", name);
  for (const auto& [hname, content] : program.headers()) {
    base::check_no_nul(content, "in-memory header", fmt::format("{} of program {}", hname, name));
  }
  // NVRTC reads each of these as a C string: a NUL would cut it short without a word.
  for (const auto& e : program.name_expressions()) base::check_no_nul(e, "name expression of program", name);
  for (const auto& a : arguments) base::check_no_nul(a, "compile option (a define, a flag) of program", name);
}

// What NVRTC is given besides the source: the in-memory headers (the program's, then kjit's
// standard ones) and the whole argument list.
struct NvrtcCall {
  std::optional<std::string> source;  // the program's source less its host definitions (compile())
  std::vector<const char*> header_names, header_sources;
  std::vector<std::string> arguments;
  bool pch = false;
  bool minimal = false;      // --minimal is the last argument
  std::size_t program = 0;   // the program's hash, for MinimalFrontEnd's memory
  std::string why_full;      // why not --minimal, for the debug log
  bool environment_left_out = false;  // the nvcc environment's pre-include dropped (NvccEnvironment)
  // What the fast path left out, put back by a retry on the full path: the arguments and headers.
  std::vector<std::string> full_arguments;
  std::vector<const char*> full_header_names, full_header_sources;
  std::vector<KernelTypeQuery> type_queries;  // extern "C" kernels' types asked of NVRTC (KernelTypes)
};

// A hash of everything NVRTC reads for the program: which programs failed under --minimal.
std::size_t program_hash(const Program& program, const std::vector<std::string>& arguments) {
  std::string all = program.name();
  auto add = [&all](std::string_view part) {
    all += '\0';
    all += part;
  };
  add(program.source());
  for (const auto& [hname, content] : program.headers()) add(hname), add(content);
  for (const auto& a : arguments) add(a);
  return std::hash<std::string>{}(all);
}

// Leaves the nvcc environment's pre-include, and kjit's in-memory headers with it, out of the
// NVRTC call of a program that includes nothing and names nothing the environment declares
// (NvccEnvironment): nothing could open or use them, so the output is the same.
void leave_out_unused_environment(const Program& program, const Reach& reach, NvrtcCall& call) {
  const std::string pre_include = "--pre-include=" + std::string(k_nvcc_environment_header);
  if (!reach.spellings.empty() || !program.headers().empty()) return;
  if (std::find(call.arguments.begin(), call.arguments.end(), pre_include) == call.arguments.end()) return;
  for (std::size_t i = 0; i < call.arguments.size(); ++i) {
    const std::string_view a = call.arguments[i];
    if (a != pre_include && (a.starts_with("--pre-include") || a.starts_with("-include"))) return;
    std::string_view define;
    if (a == "-D" || a == "--define-macro") define = i + 1 < call.arguments.size() ? call.arguments[++i] : "";
    else if (a.starts_with("--define-macro=")) define = a.substr(15);
    else if (a.starts_with("-D")) define = a.substr(2);
    if (!NvccEnvironment::name_used(define).empty()) return;
  }
  for (const auto& e : program.name_expressions()) {
    if (!NvccEnvironment::name_used(e).empty()) return;
  }
  if (!NvccEnvironment::name_used(program.source()).empty()) return;
  if (!MinimalFrontEnd::observing_construct(program.source()).empty()) return;  // __has_include(<cmath>), ##
  for (const auto& e : program.name_expressions()) {
    if (!MinimalFrontEnd::observing_construct(e).empty()) return;
  }
  call.full_arguments = call.arguments;
  call.full_header_names = call.header_names;
  call.full_header_sources = call.header_sources;
  std::erase(call.arguments, pre_include);
  call.header_names.clear();
  call.header_sources.clear();
  call.environment_left_out = true;
}

// Whether to ask for NVRTC's minimal front end (MinimalFrontEnd), and if not, why.
void choose_front_end(const Program& program, const Reach& reach, FastPath fast, NvrtcCall& call) {
  if (fast == FastPath::off) {
    call.why_full = "KJIT_NVRTC_FAST (RuntimeConfig::nvrtc_fast) is off";
    return;
  }
  leave_out_unused_environment(program, reach, call);
  ProgramText text;
  text.source = program.source();
  for (const auto& [hname, content] : program.headers()) text.headers.emplace_back(content);
  for (const auto& header : reach.user_headers) text.headers.emplace_back(header.content);
  for (const auto& e : program.name_expressions()) text.headers.emplace_back(e);  // NVRTC parses them too
  for (const auto& spelling : reach.spellings) {
    const bool user = std::any_of(reach.user_headers.begin(), reach.user_headers.end(),
                                  [&spelling](const ScannedHeader& h) { return h.spelling == spelling; });
    const bool in_memory = std::any_of(program.headers().begin(), program.headers().end(),
                                       [&spelling](const auto& h) { return h.first == spelling; });
    if (!user && !in_memory) text.other_includes.emplace_back(spelling);
  }
  for (const auto& a : call.arguments) text.arguments.emplace_back(a);
  call.why_full = MinimalFrontEnd::ruled_out(text);
  if (!call.why_full.empty()) return;
  call.program = program_hash(program, call.arguments);
  if (MinimalFrontEnd::failed_before(call.program)) {
    call.why_full = "it failed under --minimal earlier in this process";
    return;
  }
  call.minimal = true;
  call.arguments.emplace_back("--minimal");
}

NvrtcCall prepare_call(const Program& program, const std::vector<std::string>& arguments,
                       const std::filesystem::path& pch_dir, FastPath fast) {
  NvrtcCall call;
  for (const auto& [hname, content] : program.headers()) {
    call.header_names.push_back(hname.c_str());
    call.header_sources.push_back(content.c_str());
  }
  std::vector<std::string>& all = call.arguments;
  all = arguments;
  if (!program.directory().empty()) all.push_back("--include-path=" + program.directory().string());
  for (const auto& dir : program.include_path()) all.push_back("--include-path=" + dir.string());
  const Reach reach = add_standard_headers(program, all, call.header_names, call.header_sources);
  for (const auto& dir : NvrtcCompiler::toolkit_include_dirs()) all.push_back("--include-path=" + dir.string());
  // NVRTC 12.9+ keeps a compile cache of its own in the driver's compute cache where a driver is
  // installed. kjit's cache is the cache: on NVRTC's hits ptxas does not run, so its report
  // (registers, spills, -Xptxas=-v) is missing from the log, compile times are not compile
  // times, and every compile takes room in the driver's JIT cache besides.
  if (NvrtcCompiler::has_own_cache() && std::find(all.begin(), all.end(), "--no-cache") == all.end()) {
    all.push_back("--no-cache");
  }
  call.pch = !pch_dir.empty();
  if (call.pch) {
    all.push_back("--pch");
    all.push_back("--pch-dir=" + pch_dir.string());
    all.push_back("--pch-messages=true");
    // PCH noise: "the command line options do not match those used when precompiled header
    // file ... was created" (629) and "not compatible with precompiled header file" (630).
    all.push_back("--diag-suppress=629,630");
  }
  choose_front_end(program, reach, fast, call);
  call.type_queries = KernelTypes::queries(program.source(), arguments);
  return call;
}

using UniqueProgram = std::unique_ptr<nvrtcProgram, ProgramDeleter>;

UniqueProgram create_program(const Program& program, const NvrtcCall& call) {
  const std::string& name = program.name();
  auto prog = UniqueProgram(new nvrtcProgram{});
  const std::string& source = call.source ? *call.source : program.source();
  std::string with_queries;  // the source and the type queries' variable
  if (!call.type_queries.empty()) with_queries = source + std::string(KernelTypes::declaration());
  check_nvrtc(nvrtcCreateProgram(prog.get(), call.type_queries.empty() ? source.c_str() : with_queries.c_str(), name.c_str(),
                                 static_cast<int>(call.header_sources.size()), call.header_sources.data(),
                                 call.header_names.data()),
              "nvrtcCreateProgram", name);
  for (const auto& expr : program.name_expressions()) {
    check_nvrtc(nvrtcAddNameExpression(*prog, expr.c_str()), "nvrtcAddNameExpression", name);
  }
  for (const auto& query : call.type_queries) {
    check_nvrtc(nvrtcAddNameExpression(*prog, query.expression.c_str()), "nvrtcAddNameExpression", name);
  }
  return prog;
}

struct CompileRun {
  nvrtcResult result;
  double ms;
};

// nvrtcCompileProgram, timed; with a PCH, under the shared hold of the PCH heap.
CompileRun run_compile(nvrtcProgram prog, const NvrtcCall& call) {
  std::vector<const char*> argv;
  for (const auto& a : call.arguments) argv.push_back(a.c_str());
  std::shared_lock<std::shared_mutex> heap_lock;
  if (call.pch) heap_lock = std::shared_lock(g_pch_heap_mutex);
  const auto start = std::chrono::steady_clock::now();
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  const auto stop = std::chrono::steady_clock::now();
  return {r, std::chrono::duration<double, std::milli>(stop - start).count()};
}

// True when the precompiled header did not fit NVRTC's PCH heap and the heap was grown to what
// it needs: compiling again creates it.
bool grew_pch_heap(nvrtcProgram prog, const std::string& name) {
  if (nvrtcGetPCHCreateStatus(prog) != NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) return false;
  std::size_t required = 0;
  if (nvrtcGetPCHHeapSizeRequired(prog, &required) != NVRTC_SUCCESS || required == 0) return false;
  std::unique_lock resize(g_pch_heap_mutex);
  std::size_t current = 0;
  nvrtcGetPCHHeapSize(&current);
  if (current < required) check_nvrtc(nvrtcSetPCHHeapSize(required), "nvrtcSetPCHHeapSize", name);
  return true;
}

std::string program_log(nvrtcProgram prog, const std::string& name) {
  std::string log;
  std::size_t log_size = 0;
  check_nvrtc(nvrtcGetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize", name);
  if (log_size > 1) {
    log.resize(log_size);
    check_nvrtc(nvrtcGetProgramLog(prog, log.data()), "nvrtcGetProgramLog", name);
    // The terminating NUL, and those NVRTC leaves inside: with ptxas's report (-Xptxas -v) NVRTC
    // 13.0 ends the log in two, so a log kept up to log_size - 1 ended in a NUL byte.
    std::erase(log, '\0');
  }
  return log;
}

// A flag NVRTC does not know is the caller's mistake, and only the log names it
// ("nvrtc: error: unrecognized option --bogus-flag found").
void throw_if_option_rejected(nvrtcResult r, const std::string& log, const std::string& name) {
  if (r != NVRTC_ERROR_INVALID_OPTION) return;
  std::string_view why = log;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.remove_suffix(1);
  throw UsageError(fmt::format("compiling program {}: NVRTC rejected an option: {}", name,
                               why.empty() ? std::string_view(nvrtcGetErrorString(r)) : why),
                   log);
}

// What a successful compile made: LTO-IR (-dlto, which makes no PTX or cubin for a link with
// -lto), the PTX, the cubin (for a real arch), the lowered name of each name expression.
void read_outputs(nvrtcProgram prog, const Program& program, const NvrtcCall& call,
                  const std::vector<std::string>& arguments, const Arch& resolved, CompileResult& result) {
  const std::string& name = program.name();
  const bool lto = std::find(arguments.begin(), arguments.end(), "-dlto") != arguments.end();
  if (lto) {
    std::size_t size = 0;
    check_nvrtc(nvrtcGetLTOIRSize(prog, &size), "nvrtcGetLTOIRSize", name);
    result.ltoir.resize(size);
    check_nvrtc(nvrtcGetLTOIR(prog, result.ltoir.data()), "nvrtcGetLTOIR", name);
  }
  std::size_t ptx_size = 0;
  check_nvrtc(nvrtcGetPTXSize(prog, &ptx_size), "nvrtcGetPTXSize", name);
  result.ptx.resize(ptx_size);
  if (ptx_size > 0) check_nvrtc(nvrtcGetPTX(prog, result.ptx.data()), "nvrtcGetPTX", name);
  if (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();

  if (resolved.is_real() && !lto) {
    std::size_t cubin_size = 0;
    check_nvrtc(nvrtcGetCUBINSize(prog, &cubin_size), "nvrtcGetCUBINSize", name);
    result.cubin.resize(cubin_size);
    check_nvrtc(nvrtcGetCUBIN(prog, result.cubin.data()), "nvrtcGetCUBIN", name);
  }
  for (const auto& expr : program.name_expressions()) {
    const char* lowered = nullptr;
    check_nvrtc(nvrtcGetLoweredName(prog, expr.c_str(), &lowered), "nvrtcGetLoweredName", name);
    result.lowered_names.emplace_back(expr, lowered ? lowered : "");
  }
  for (const auto& query : call.type_queries) {
    const char* lowered = nullptr;
    check_nvrtc(nvrtcGetLoweredName(prog, query.expression.c_str(), &lowered), "nvrtcGetLoweredName", name);
    if (lowered) result.kernel_types.emplace_back(query.kernel, lowered);
  }
}

// ptxas's "Unresolved extern function '_Z6helperf'": a device function declared here and defined
// elsewhere, which only a link brings in. A note saying how, or "" for any other log.
std::string explain_unresolved_externs(std::string_view log, const std::string& program) {
  constexpr std::string_view marker = "Unresolved extern function '";
  const std::size_t at = log.find(marker);
  if (at == std::string_view::npos) return {};
  const std::size_t start = at + marker.size();
  std::string symbol(log.substr(start, log.find('\'', start) - start));
  int status = 0;  // a C++ function's declaration, with its symbol: "helper(float) (_Z6helperf)"
  if (std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
      status == 0 && d) {
    symbol = fmt::format("{} ({})", d.get(), symbol);
  }
  return fmt::format("kjit: {} is called here but defined in no source of this program: a device function of "
                     "another file comes in by a link of relocatable device code (-rdc=true): kjit compile --link "
                     "{} OTHER.cu, or kjit::Link in C++; else define it here\n",
                     symbol, program);
}

// NVRTC's "device-side kernel launch could not be processed as the required runtime APIs are not
// declared": a kernel launches a kernel (dynamic parallelism), which needs relocatable device code
// linked with the device runtime. A note saying how, or "" for any other log.
std::string explain_device_launch(std::string_view log, const std::string& program) {
  if (log.find("device-side kernel launch could not be processed") == std::string_view::npos) return {};
  return fmt::format("kjit: a kernel of {} launches a kernel from the device (dynamic parallelism), which needs "
                     "relocatable device code (-rdc) linked with the CUDA device runtime: compile it in a link, kjit "
                     "compile --link {} (C++: kjit::Link, Python: kjit.Link), which adds the toolkit's "
                     "libcudadevrt.a\n",
                     program, program);
}

// NVRTC's "cannot determine which instance of function template "shift" is intended" for a name
// expression: the template is there, and no instance of it takes those template arguments (an
// enable_if or a constraint that excludes them, or too many). A note quoting NVRTC's reason, or ""
// for any other log; then the namespace hint (name_expression_hint) does not apply.
std::string explain_excluded_instance(std::string_view log, const std::vector<std::string>& expressions) {
  constexpr std::string_view marker = "cannot determine which instance of function template \"";
  std::string out;
  for (std::size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = log.find('"', start);
    if (end == std::string_view::npos) break;
    const std::string_view name = log.substr(start, end - start);
    const std::size_t line_start = log.rfind('\n', at) == std::string_view::npos ? 0 : log.rfind('\n', at) + 1;
    std::string_view reason = log.substr(line_start, log.find('\n', at) - line_start);
    if (const std::size_t e = reason.find("error: "); e != std::string_view::npos) reason.remove_prefix(e + 7);
    for (const std::string& expression : expressions) {
      const std::string_view e = expression;
      const std::size_t open = e.find('<');
      std::string_view template_name = e.substr(0, open);
      while (!template_name.empty() && template_name.front() == ' ') template_name.remove_prefix(1);
      while (!template_name.empty() && template_name.back() == ' ') template_name.remove_suffix(1);
      if (const std::size_t colons = template_name.rfind("::"); colons != std::string_view::npos) {
        template_name.remove_prefix(colons + 2);
      }
      if (template_name != name) continue;
      const std::string line = fmt::format(
          "kjit: the name expression \"{}\" names no instance: the template kernel {} is there, and none of its "
          "instances takes these template arguments (an enable_if or a constraint that excludes them, or a wrong "
          "number of them); NVRTC: {}; name arguments it accepts\n",
          expression, name, reason);
      if (out.find(line) == std::string::npos) out += line;
    }
  }
  return out;
}

// A log without NVRTC's "function "X" was declared but never referenced" warnings for the host
// functions kjit left out (`left_out`, in `program`): kjit made those declarations (and the warning
// would quote its rewritten line, on every cache hit). The Remark after the warnings goes with
// them when none is left.
std::string without_left_out_warnings(std::string_view log, const std::string& program,
                                      const std::vector<std::string>& left_out) {
  if (left_out.empty() || log.find("was declared but never referenced") == std::string_view::npos) {
    return std::string(log);
  }
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < log.size();) {
    const std::size_t end = log.find('\n', pos);
    lines.push_back(log.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos + 1));
    pos = end == std::string_view::npos ? log.size() : end + 1;
  }
  std::string out;
  bool warnings_left = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    bool dropped = false;
    if (line.starts_with(program + "(") && line.find("was declared but never referenced") != std::string_view::npos) {
      for (const std::string& name : left_out) {
        if (line.find("function \"" + name + "\"") == std::string_view::npos) continue;
        // The warning, its quoted line and caret, up to the blank line that ends it.
        while (i + 1 < lines.size() && lines[i + 1] != "\n" && !lines[i + 1].empty()) ++i;
        if (i + 1 < lines.size()) ++i;
        dropped = true;
        break;
      }
    }
    if (dropped) continue;
    if (line.find(": warning") != std::string_view::npos) warnings_left = true;
    out += line;
  }
  if (!warnings_left) {
    constexpr std::string_view remark = "Remark: The warnings can be suppressed with";
    if (const std::size_t at = out.find(remark); at != std::string::npos) {
      std::size_t end = out.find('\n', at);
      end = end == std::string::npos ? out.size() : end + 1;
      if (end < out.size() && out[end] == '\n') ++end;  // and its blank line
      out.erase(at, end - at);
    }
  }
  return out;
}

// The user's -default-device (every function without an execution space compiled as device
// code, host code included) in a compile that failed: a note saying what it did and the way out,
// or "".
std::string explain_default_device(const std::vector<std::string>& arguments) {
  const bool asked = std::any_of(arguments.begin(), arguments.end(), [](const std::string& a) {
    return a == "-default-device" || a == "--device-as-default-execution-space";
  });
  if (!asked) return {};
  return "kjit: -default-device compiles every function without __host__ or __device__ as device code, the "
         "program's host code too (main, the functions it calls, their std:: containers and CUDA runtime calls), "
         "which NVRTC cannot compile: drop -default-device (kjit leaves host function definitions out by itself "
         "and compiles what remains), or keep the host code inside #ifndef __CUDACC_RTC__ ... #endif\n";
}

// The folders NVRTC searches for #include, in the order given (-I DIR, --include-path=DIR).
std::vector<std::filesystem::path> include_folders(const std::vector<std::string>& arguments) {
  std::vector<std::filesystem::path> out;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string_view a = arguments[i];
    if (a.starts_with("--include-path=")) out.emplace_back(a.substr(15));
    else if (a.starts_with("-I") && a.size() > 2) out.emplace_back(a.substr(2));
    else if ((a == "-I" || a == "--include-path") && i + 1 < arguments.size()) out.emplace_back(arguments[++i]);
  }
  return out;
}

// The text of a file NVRTC's log names: the program, one of its in-memory headers, a file on disk.
std::optional<std::string> source_named(const Program& program, const std::string& file) {
  if (file == program.name()) return program.source();
  for (const auto& [hname, content] : program.headers()) {
    if (hname == file) return content;
  }
  system::FileContent f = base::read_source_file(file);
  if (f.ok()) return std::string(f.bytes);
  return std::nullopt;
}

}  // namespace

namespace {
std::atomic<bool> g_requested{false};  // a request began or compile() was called in this process
}  // namespace

void NvrtcCompiler::note_request() noexcept {
  if (!g_requested.load(std::memory_order_relaxed)) g_requested.store(true, std::memory_order_relaxed);
}
bool NvrtcCompiler::requested() noexcept { return g_requested.load(std::memory_order_relaxed); }

NvrtcOutput NvrtcCompiler::compile(const Program& program, const std::vector<std::string>& arguments,
                                   const Arch& resolved, const std::filesystem::path& pch_dir, FastPath fast) {
  note_request();
  const std::string& name = program.name();
  check_no_nul_in(program, arguments);
  NvrtcCall call = prepare_call(program, arguments, pch_dir, fast);
  FrontEnd front_end = call.minimal ? FrontEnd::minimal : FrontEnd::full;
  bool option_suspect = false;  // NVRTC refused an option while --minimal was among them
  bool grown = false;
  double spent_ms = 0;  // every attempt's NVRTC time
  std::string note;     // kjit's word in the log, when it compiled host declarations as device ones
  std::string host_left_out;             // kjit's word when host definitions were left out
  std::vector<std::string> left_out_names;  // the functions whose bodies it left out
  std::size_t arguments_before_host = 0;  // call.arguments before that retry
  // The arguments a compile without the host definitions failed with: with those, the program as it
  // is (other arguments, such as another front end's, try again).
  std::optional<std::vector<std::string>> host_retried_with;
  for (;;) {
    const UniqueProgram prog = create_program(program, call);
    const CompileRun run = run_compile(*prog, call);
    spent_ms += run.ms;
    if (call.pch && !grown && run.result == NVRTC_SUCCESS && grew_pch_heap(*prog, name)) {
      grown = true;
      continue;  // retried once: this time the PCH fits
    }
    // Leaves the full front end's NVRTC call (the same arguments, less --minimal) for a program
    // that failed under --minimal: its log is the one the user sees. Remembered for this process.
    auto fall_back = [&call, &front_end] {
      std::erase(call.arguments, std::string("--minimal"));
      if (call.environment_left_out) {  // the whole full path: the nvcc environment back too
        std::vector<std::string> full = call.full_arguments;
        for (const auto& added : call.arguments) {  // what a retry added since (-default-device)
          if (std::find(full.begin(), full.end(), added) == full.end()) full.push_back(added);
        }
        call.arguments = std::move(full);
        call.header_names = call.full_header_names;
        call.header_sources = call.full_header_sources;
        call.environment_left_out = false;
      }
      call.minimal = false;
      front_end = FrontEnd::fell_back;
    };
    if (call.minimal && run.result == NVRTC_ERROR_INVALID_OPTION) {
      option_suspect = true;  // this NVRTC may not know --minimal: known once the retry runs
      fall_back();
      continue;
    }
    if (option_suspect && run.result != NVRTC_ERROR_INVALID_OPTION) MinimalFrontEnd::remember_refused();
    NvrtcOutput out;
    out.front_end = front_end;
    out.environment_left_out = call.environment_left_out;
    CompileResult& result = out.result;
    result.program_name = name;
    result.arch = resolved;
    result.options = arguments;
    result.compile_ms = spent_ms;
    result.log = program_log(*prog, name);
    if (call.pch) result.pch = strip_pch_messages(result.log);
    throw_if_option_rejected(run.result, result.log, name);
    if (run.result == NVRTC_ERROR_COMPILATION && !call.type_queries.empty()) {
      // Compiled again without the type queries: NVRTC could not answer one (a kernel declared
      // through a function-like macro), or the program fails as it is, and its log is its own.
      call.type_queries.clear();
      continue;
    }
    if (run.result == NVRTC_ERROR_COMPILATION) {
      const HostFunctionErrors host = find_host_functions(result.log, [&](const std::string& file) {
        return file == name && call.source ? std::optional<std::string>(*call.source) : source_named(program, file);
      });
      const bool declarations_only =
          host.only_these && std::none_of(host.functions.begin(), host.functions.end(),
                                          [](const HostFunction& f) { return f.definition && !f.is_constexpr; });
      // Host code around the kernels (a tutorial's main() and what it calls): compiled again
      // without the bodies of the program's host function definitions, as nvcc compiles them for
      // the host only; they become host declarations, compiled as device ones nothing calls. If
      // that does not compile either, the program as it is, with its own errors.
      if (call.source) {
        if (declarations_only && note.empty()) {
          // The declarations kjit made of the functions it left out are not said again as "compiled
          // as device functions": one note, not two that contradict each other.
          std::vector<HostFunction> others;
          for (const HostFunction& f : host.functions) {
            if (std::find(left_out_names.begin(), left_out_names.end(), f.name) == left_out_names.end()) others.push_back(f);
          }
          note = host_left_out + (others.empty() ? std::string() : explain_host_declarations(others));
          call.arguments.emplace_back("-default-device");
          continue;
        }
        call.source.reset();
        call.arguments.resize(arguments_before_host);
        left_out_names.clear();
        note.clear();
        host_retried_with = call.arguments;
        continue;
      }
      if (host_retried_with != call.arguments && !declarations_only && note.empty()) {
        if (auto without = without_host_definitions(program.source(), name, host.functions)) {
          host_left_out = explain_host_definitions_left_out(host.functions, name);
          left_out_names.clear();
          for (const HostFunction& f : host.functions) {  // as without_host_definitions chose them
            if (f.definition && !f.is_constexpr && f.file == name) left_out_names.push_back(f.name);
          }
          arguments_before_host = call.arguments.size();
          call.source = std::move(*without);
          continue;
        }
      }
      if (declarations_only && note.empty()) {
        // What nvcc compiles for the host (declarations device code never calls, constexpr functions
        // it may call): compiled again as device functions (once; the flag is not part of the key:
        // the same inputs always take this path).
        note = explain_host_declarations(host.functions);
        call.arguments.emplace_back("-default-device");
        continue;
      }
      if (call.minimal) {
        MinimalFrontEnd::remember_failure(call.program);
        fall_back();
        continue;
      }
      const std::string excluded = explain_excluded_instance(result.log, program.name_expressions());
      // What the errors come from, when it is a header NVRTC cannot take, first: hundreds of lines follow.
      result.log = note + explain_unusable_headers(result.log) + result.log + explain_host_definitions(host.functions) +
                   (excluded.empty() ? name_expression_hint(result.log, program.source(), program.name_expressions())
                                     : excluded) +
                   explain_device_launch(result.log, name) + explain_default_device(arguments) +
                   explain_unresolved_externs(result.log, name) +
                   explain_missing_headers(result.log, include_folders(call.arguments));
      out.why_full = std::move(call.why_full);
      out.succeeded = false;
      return out;
    }
    check_nvrtc(run.result, "nvrtcCompileProgram", name);
    read_outputs(*prog, program, call, arguments, resolved, result);
    result.log = note + (call.source ? without_left_out_warnings(result.log, name, left_out_names) : result.log);
    out.why_full = std::move(call.why_full);
    out.succeeded = true;
    return out;
  }
}

std::string describe(const NvrtcOutput& out) {
  const std::string environment = out.environment_left_out ? ", without the nvcc environment (named nowhere)" : "";
  switch (out.front_end) {
  case FrontEnd::minimal: return "NVRTC's minimal front end (--minimal)" + environment;
  case FrontEnd::fell_back: return "NVRTC's full front end, after the minimal one (--minimal) failed" + environment;
  case FrontEnd::full: break;
  }
  return (out.why_full.empty() ? "NVRTC's full front end" : "NVRTC's full front end (" + out.why_full + ")") +
         environment;
}

std::string source_excerpt(const std::string& program_name, const std::string& source, const std::string& log) {
  // Lines the log names: "<program_name>(LINE): error: ..."
  std::set<int> named;
  std::string needle = program_name + "(";
  for (std::size_t pos = log.find(needle); pos != std::string::npos; pos = log.find(needle, pos + 1)) {
    if (pos > 0 && log[pos - 1] != '\n') continue;
    std::size_t p = pos + needle.size();
    int line = 0;
    while (p < log.size() && std::isdigit(static_cast<unsigned char>(log[p]))) line = line * 10 + (log[p++] - '0');
    if (p < log.size() && log[p] == ')' && line > 0) named.insert(line);
  }
  if (named.empty()) return {};
  std::vector<std::string_view> lines;
  std::string_view s = source;
  while (!s.empty()) {
    auto nl = s.find('\n');
    lines.push_back(s.substr(0, nl));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  std::set<int> shown;
  for (int l : named) {
    for (int k = std::max(1, l - 2); k <= std::min<int>(static_cast<int>(lines.size()), l + 2); ++k) shown.insert(k);
  }
  std::string out;
  int previous = 0;
  for (int k : shown) {
    if (previous && k != previous + 1) out += "   ...\n";
    out += fmt::format("{} {:>4} | {}\n", named.count(k) ? ">" : " ", k, lines[static_cast<std::size_t>(k - 1)]);
    previous = k;
  }
  return out;
}

}  // namespace kjit::compile
