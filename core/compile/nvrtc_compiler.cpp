#include "core/compile/nvrtc_compiler.hpp"

#include "core/base/source_file.hpp"
#include "core/compile/host_functions.hpp"
#include "core/compile/host_system_headers.hpp"
#include "core/compile/libcudacxx_integers.hpp"
#include "core/compile/scan/minimal_front_end.hpp"
#include "core/compile/missing_headers.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/compile/scan/nvcc_environment.hpp"
#include "core/compile/scan/include_scanner.hpp"
#include "core/compile/kernel_types.hpp"
#include "core/compile/headers/standard_headers.hpp"
#include "core/compile/scan/template_kernels.hpp"
#include "core/compile/scan/toolkit_headers.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nvrtc.h>
#include <cxxabi.h>


#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
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

}  // namespace

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
// functions) and libcu++'s <cuda/std/cstdint> with nvcc's branch (libcudacxx_integers), each unless the program has an in-memory header of that name or a user include
// dir (the user's -I, the program's folder and include path, all in `arguments` by now) holds a
// file of that name: the user's header wins. The toolkit's own include folders, named with -I as
// kernels for nvcc often do, are not the user's: their cuda.h is the one kjit's stands for.
Reach add_standard_headers(const Program& program, const std::vector<std::string>& arguments,
                           std::vector<const char*>& names, std::vector<const char*>& sources) {
  std::vector<std::filesystem::path> dirs;
  auto add_user_dir = [&dirs](std::string_view dir) {
    std::error_code ec;
    for (const auto& toolkit : NvrtcInfo::toolkit_include_dirs()) {
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
  for (const auto& [header, content] : libcudacxx_integer_headers()) add(header, content);
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
  std::deque<std::string> served_empty;  // host system headers NVRTC could not open (HostSystemHeaders)
  std::vector<ScannedHeader> user_headers;  // the user headers on disk the program reaches
  std::vector<std::string> extra_name_expressions;  // template kernels host code left out instantiated
  // What the fast path left out, put back by a retry on the full path: the arguments and headers.
  std::vector<std::string> full_arguments;
  std::vector<const char*> full_header_names, full_header_sources;
  std::vector<KernelTypeQuery> type_queries;  // extern "C" kernels' types asked of NVRTC (KernelTypes)
};

// Serves each host system header the log says NVRTC could not open empty (HostSystemHeaders);
// false when there is none new.
bool serve_unopened_system_headers(std::string_view log, NvrtcCall& call) {
  bool added = false;
  for (auto& name : HostSystemHeaders::unopened(log)) {
    if (std::find(call.served_empty.begin(), call.served_empty.end(), name) != call.served_empty.end()) continue;
    call.served_empty.push_back(std::move(name));
    call.header_names.push_back(call.served_empty.back().c_str());
    call.header_sources.push_back(HostSystemHeaders::served_text().data());
    added = true;
  }
  return added;
}

// The device runtime API (NvccEnvironment::device_runtime_name) pre-included for a program whose
// log says it names one of its functions, when the nvcc environment is on; false when it does not,
// or it is there already.
bool add_device_runtime(std::string_view log, const std::vector<std::string>& arguments, NvrtcCall& call) {
  const std::string pre_include = "--pre-include=" + std::string(k_device_runtime_header);
  const std::string environment = "--pre-include=" + std::string(k_nvcc_environment_header);
  if (std::find(arguments.begin(), arguments.end(), environment) == arguments.end()) return false;
  if (std::find(call.arguments.begin(), call.arguments.end(), pre_include) != call.arguments.end()) return false;
  if (NvccEnvironment::device_runtime_name(log).empty()) return false;
  call.arguments.push_back(pre_include);
  const bool served = std::any_of(call.header_names.begin(), call.header_names.end(),
                                  [](const char* n) { return k_device_runtime_header == n; });
  for (const auto& [header, content] : standard_header_files()) {
    if (header == k_device_runtime_header && !served) {
      call.header_names.push_back(header.data());
      call.header_sources.push_back(content.data());
    }
  }
  return true;
}

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
  Reach reach = add_standard_headers(program, all, call.header_names, call.header_sources);
  for (const auto& dir : NvrtcInfo::toolkit_include_dirs()) all.push_back("--include-path=" + dir.string());
  // NVRTC 12.9+ keeps a compile cache of its own in the driver's compute cache where a driver is
  // installed. kjit's cache is the cache: on NVRTC's hits ptxas does not run, so its report
  // (registers, spills, -Xptxas=-v) is missing from the log, compile times are not compile
  // times, and every compile takes room in the driver's JIT cache besides.
  if (NvrtcInfo::has_own_cache() && std::find(all.begin(), all.end(), "--no-cache") == all.end()) {
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
  call.user_headers = std::move(reach.user_headers);
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
  for (const auto& expr : call.extra_name_expressions) {
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



// Whether NVRTC's `log` says it could not resolve name expression `expression` ("Input name
// expression was: " k < T, 3 >""), spaces aside.
bool name_expression_refused(std::string_view log, std::string_view expression) {
  auto squeeze = [](std::string_view s) {
    std::string out;
    for (char c : s) {
      if (c != ' ') out += c;
    }
    return out;
  };
  const std::string want = squeeze(expression);
  constexpr std::string_view marker = "Input name expression was: \"";
  for (std::size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = log.find('"', start);
    if (end != std::string_view::npos && squeeze(log.substr(start, end - start)) == want) return true;
  }
  return false;
}

// Host code left out of what NVRTC compiles (host_functions), round by round: each round reads the
// log's "not allowed in JIT mode" errors, leaves those declarations out of the files they are in
// (the program's source, its in-memory headers, the user headers it reaches on disk, which NVRTC
// then gets in memory under the spelling they are included by), and the compile runs again. The
// toolkit's and the system's files are never changed.
class HostCodeRounds {
public:
  static constexpr int k_max_rounds = 8;  // NVRTC stops at 100 errors: a large header takes several
  static constexpr const char* k_error_limit = "-Xcudafe=--error_limit=100000";

  HostCodeRounds(const Program& program, NvrtcCall& call) : m_program(program), m_call(call) {}

  // Leaves out what `log` names; false when there is nothing to leave out or it cannot be (why()).
  bool leave_out(std::string_view log) {
    const HostCodeErrors host = find_host_code(log);
    if (host.declarations.empty() || m_rounds >= k_max_rounds) return false;
    if (m_first_log.empty()) {
      m_first_log = std::string(log);
      m_first_found = host.declarations;
    }
    if (log.find("Error limit reached.") != std::string_view::npos && !m_error_limit_raised) {
      // NVRTC stops at 100 errors, and a body whose callees went in an earlier round (main() after a
      // project's helpers) fails on their names without the error that marks it host code: every
      // error of the program first, then all of it in one round.
      m_call.arguments.emplace_back(k_error_limit);
      m_error_limit_raised = true;
      ++m_rounds;
      return true;
    }
    if (!m_context) m_context = program_context(texts());
    std::vector<std::string> files;
    bool cccl = false;
    for (const auto& d : host.declarations) {
      if (is_cccl_host_file(d.file)) cccl = true;
      else if (!d.is_constexpr && std::find(files.begin(), files.end(), d.file) == files.end()) files.push_back(d.file);
    }
    bool progress = cccl && serve_cccl_host_headers();
    if (cccl && !progress) {
      m_why = "CCCL's host API (cub/device/, thrust/) is reached through a header kjit does not change";
      return false;
    }
    for (const auto& file : files) {
      std::string* text = text_of(file);
      if (!text) {
        m_why = fmt::format("{} is the toolkit's or the system's, which kjit does not change", file);
        return false;
      }
      auto result = leave_out_host_code(*text, file, host.declarations, *m_context);
      if (auto* why = std::get_if<std::string>(&result)) {
        m_why = std::move(*why);
        return false;
      }
      auto& left = std::get<HostCodeLeftOut>(result);
      if (left.left_out.empty()) continue;
      *text = std::move(left.text);
      for (auto& l : left.left_out) m_left_out.push_back(std::move(l));
      progress = true;
    }
    const bool constexpr_found = std::any_of(host.declarations.begin(), host.declarations.end(),
                                             [](const HostDeclaration& d) { return d.is_constexpr; });
    if (constexpr_found && !m_default_device) {
      // What nvcc lets device code call (--expt-relaxed-constexpr): compiled as device functions.
      m_call.arguments.emplace_back("-default-device");
      m_default_device = true;
      m_constexpr_note = explain_host_declarations(host.declarations);
      progress = true;
    }
    if (progress) ++m_rounds;
    return progress;
  }

  // The log of a program that compiled: what was left out, then NVRTC's. `kept`: the
  // instantiations compiled by name.
  std::string succeeded_log(const std::string& log, const std::vector<std::string>& kept) const {
    const ProgramContext none;
    return explain_cccl_served() + explain_left_out(m_left_out, m_context ? *m_context : none, kept) +
           m_constexpr_note + log;
  }

  // The name expressions for the template kernels the left-out code instantiated (once).
  std::vector<std::string> instantiations() const {
    return m_context ? instantiation_expressions(m_left_out, *m_context) : std::vector<std::string>{};
  }

  // The log of a program that did not compile: its own errors first (the first log with host code
  // errors), why kjit could not leave that code out, then the last attempt's first error.
  // The NVRTC log a failure shows: the first round's, when host code was left out since.
  const std::string& shown_log(const std::string& log) const { return m_first_log.empty() ? log : m_first_log; }

  std::string failed_log(const std::string& log) const {
    if (m_first_log.empty()) return log + explain_host_definitions(find_host_code(log).declarations, m_why);
    std::string out = m_first_log + explain_host_definitions(m_first_found, m_why);
    if (!m_left_out.empty() && log != m_first_log) {
      const std::size_t err = log.find(": error: ");
      const std::size_t begin = err == std::string::npos ? 0 : log.rfind('\n', err) + 1;
      const std::size_t end = err == std::string::npos ? 0 : log.find('\n', err);
      if (err != std::string::npos) {
        out += fmt::format("kjit: compiled again without that host code, the program failed too: {}\n",
                           log.substr(begin, end - begin));
      }
    }
    return out;
  }

  // Every text back as the program has it (another front end starts again).
  void reset() {
    m_call.source.reset();
    for (const auto& [index, original] : m_replaced_headers) m_call.header_sources[index] = original;
    m_replaced_headers.clear();
    m_call.header_names.resize(m_call.header_names.size() - m_appended);
    m_call.header_sources.resize(m_call.header_sources.size() - m_appended);
    m_appended = 0;
    m_overrides.clear();
    m_override_index.clear();
    m_cccl_served.clear();
    if (m_default_device) std::erase(m_call.arguments, std::string("-default-device"));
    if (m_error_limit_raised) std::erase(m_call.arguments, std::string(k_error_limit));
    m_error_limit_raised = false;
    for (const auto& path : m_added_paths) {
      const auto at = std::find(m_call.arguments.begin(), m_call.arguments.end(), path);
      if (at != m_call.arguments.end()) m_call.arguments.erase(at);
    }
    m_added_paths.clear();
    m_default_device = false;
    m_left_out.clear();
    m_first_log.clear();
    m_first_found.clear();
    m_constexpr_note.clear();
    m_why.clear();
    m_rounds = 0;
  }

  bool changed() const { return m_rounds > 0; }

private:
  struct Override {
    std::string name;
    std::string text;
  };

  std::vector<std::string_view> texts() const {
    std::vector<std::string_view> out{m_program.source()};
    for (const auto& [hname, content] : m_program.headers()) out.emplace_back(content);
    for (const auto& h : m_call.user_headers) out.emplace_back(h.content);
    return out;
  }

  // The text NVRTC reads for `file` as a log names it, made changeable: nullptr for a file kjit
  // does not change.
  std::string* text_of(const std::string& file) {
    if (file == m_program.name()) {
      if (!m_call.source) m_call.source = m_program.source();
      return &*m_call.source;
    }
    for (auto& o : m_overrides) {
      if (o.name == file) return &o.text;
    }
    for (std::size_t i = 0; i < m_call.header_names.size(); ++i) {
      if (m_call.header_names[i] != file) continue;
      const auto own = std::find_if(m_program.headers().begin(), m_program.headers().end(),
                                    [&file](const auto& h) { return h.first == file; });
      if (own == m_program.headers().end()) return nullptr;  // kjit's own headers
      return override_header(file, own->second, i);
    }
    // A user header on disk: served in memory under the spelling it is included by.
    std::error_code ec;
    for (const auto& h : m_call.user_headers) {
      if (!std::filesystem::equivalent(file, h.path, ec)) continue;
      // Reached again by another spelling: one text for both is beyond what NVRTC's names allow.
      if (std::any_of(m_overrides.begin(), m_overrides.end(), [&h](const Override& o) { return o.name == h.spelling; })) {
        return nullptr;
      }
      std::string* text = override_header(h.spelling, h.content, std::nullopt);
      // Its own "..." includes are looked up next to it: its folder goes last on the include path.
      m_added_paths.push_back("--include-path=" + h.path.parent_path().string());
      m_call.arguments.push_back(m_added_paths.back());
      return text;
    }
    return nullptr;
  }

  std::string* override_header(const std::string& name, const std::string& content, std::optional<std::size_t> index) {
    m_overrides.push_back({name, content});
    Override& o = m_overrides.back();
    if (index) {
      m_replaced_headers.emplace_back(*index, m_call.header_sources[*index]);
      m_override_index.push_back(*index);
    } else {
      m_call.header_names.push_back(o.name.c_str());
      m_call.header_sources.push_back(nullptr);
      m_override_index.push_back(m_call.header_sources.size() - 1);
      ++m_appended;
    }
    return &o.text;
  }

  // CCCL's host API included directly (<cub/device/device_reduce.cuh>, <thrust/device_vector.h>):
  // served empty, so that the host code that calls it is left out as host code (the file's own
  // kernels compile). False when the program includes none not yet served.
  bool serve_cccl_host_headers() {
    bool served = false;
    for (const std::string_view text : texts()) {
      for (auto& [spelling, quoted] : IncludeScanner::include_lines(std::string(text))) {
        if (!spelling.starts_with("cub/device/") && !spelling.starts_with("thrust/")) continue;
        if (std::find(m_cccl_served.begin(), m_cccl_served.end(), spelling) != m_cccl_served.end()) continue;
        override_header(spelling, std::string(k_cccl_served_text), std::nullopt);
        m_cccl_served.push_back(spelling);
        served = true;
      }
    }
    return served;
  }

  std::string explain_cccl_served() const {
    if (m_cccl_served.empty()) return {};
    std::string list;
    for (const auto& s : m_cccl_served) list += fmt::format("{}<{}>", list.empty() ? "" : ", ", s);
    std::string callers;
    for (const auto& l : m_left_out) {
      if (l.kind == HostDeclaration::Kind::function) callers += fmt::format("{}{} ({}:{})", callers.empty() ? "" : ", ", l.name, l.file, l.line);
    }
    return fmt::format(
        "kjit: warning: {} {} CCCL's host API (device-wide algorithms, launched from host code): served empty, and "
        "the host code that calls {} left out{}. The kernels nvcc instantiates for those calls (CUB's and Thrust's "
        "own, one set per call and type) are not compiled: NVRTC compiles no host code to instantiate them from; "
        "the file's own kernels are all here (docs/headers.md)\n",
        list, m_cccl_served.size() > 1 ? "are" : "is", m_cccl_served.size() > 1 ? "them" : "it",
        callers.empty() ? std::string() : " (" + callers + ")");
  }

  static constexpr std::string_view k_cccl_served_text =
      "// kjit: CCCL's host API (device-wide algorithms launched from the host), served empty: NVRTC has no host\n";

public:
  // Points NVRTC's header list at the overrides' current texts (before each compile).
  void refresh() {
    for (std::size_t k = 0; k < m_overrides.size(); ++k) m_call.header_sources[m_override_index[k]] = m_overrides[k].text.c_str();
  }

private:
  const Program& m_program;
  NvrtcCall& m_call;
  std::deque<Override> m_overrides;
  std::vector<std::size_t> m_override_index;                     // where each override is in the header list
  std::vector<std::pair<std::size_t, const char*>> m_replaced_headers;  // program headers changed, and their text
  std::vector<std::string> m_added_paths;  // --include-path= of user headers served in memory
  std::size_t m_appended = 0;                    // overrides appended to the header list
  std::vector<std::string> m_cccl_served;         // CCCL host API spellings served empty
  std::optional<ProgramContext> m_context;
  std::vector<LeftOut> m_left_out;
  std::string m_first_log;
  std::vector<HostDeclaration> m_first_found;
  std::string m_constexpr_note;
  std::string m_why;
  bool m_default_device = false;
  int m_rounds = 0;
  bool m_error_limit_raised = false;
};

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
  HostCodeRounds host(program, call);
  bool instantiating = false;                    // compiling the left-out code's instances by name
  std::optional<NvrtcOutput> without_instances;  // the result before that
  for (;;) {
    host.refresh();
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
    if (instantiating && run.result == NVRTC_ERROR_COMPILATION) {
      // Instances NVRTC cannot name at namespace scope (written with a template parameter or a local
      // constant): compiled without them, and named in the warning.
      const std::size_t before = call.extra_name_expressions.size();
      std::erase_if(call.extra_name_expressions,
                    [&](const std::string& e) { return name_expression_refused(result.log, e); });
      if (call.extra_name_expressions.size() < before && !call.extra_name_expressions.empty()) continue;
      without_instances->result.compile_ms = spent_ms;
      return std::move(*without_instances);
    }
    if (run.result == NVRTC_ERROR_COMPILATION && !call.type_queries.empty()) {
      // Compiled again without the type queries: NVRTC could not answer one (a kernel declared
      // through a function-like macro), or the program fails as it is, and its log is its own.
      call.type_queries.clear();
      continue;
    }
    if (run.result == NVRTC_ERROR_COMPILATION &&
        (serve_unopened_system_headers(result.log, call) || add_device_runtime(result.log, arguments, call))) {
      continue;
    }
    const std::string served_note =
        HostSystemHeaders::explain({call.served_empty.begin(), call.served_empty.end()});
    if (run.result == NVRTC_ERROR_COMPILATION) {
      // Host code around the kernels (a tutorial's main() and what it calls, a project's helpers in
      // its headers): left out as nvcc compiles it for the host only, and compiled again.
      if (host.leave_out(result.log)) continue;
      if (call.minimal) {
        MinimalFrontEnd::remember_failure(call.program);
        host.reset();
        fall_back();
        continue;
      }
      const std::string excluded = explain_excluded_instance(result.log, program.name_expressions());
      // What the errors come from, when it is a header NVRTC cannot take, first: hundreds of lines follow.
      result.log = served_note + explain_unusable_headers(host.shown_log(result.log)) + host.failed_log(result.log) +
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
    const std::string nvrtc_log = result.log;
    result.log = served_note + host.succeeded_log(nvrtc_log, call.extra_name_expressions);
    out.why_full = call.why_full;
    out.succeeded = true;
    if (!instantiating) {
      // The template kernels the left-out host code instantiated: compiled by name, as nvcc compiles them.
      call.extra_name_expressions = host.instantiations();
      if (!call.extra_name_expressions.empty()) {
        instantiating = true;
        without_instances = std::move(out);
        continue;
      }
    }
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
