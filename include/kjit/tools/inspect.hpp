// kjit::inspect: see what the compiler made of a program. Parse PTX into its functions,
// normalize it (comments, debug info and register/label numbering removed), summarize each
// kernel (instruction counts, registers, ptxas resource usage), diff two builds, disassemble
// cubin to SASS, and dump everything a compile produced into a folder.
// Parsing, normalizing, summarizing and diffing never throw for any input text (PTX they do
// not understand is kept as it is); compiling throws like Runtime::compile, sass() throws
// UnavailableError when no disassembler is installed, and write_dump() throws IoError.
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/program.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {
}

namespace kjit::inspect {

// ---------------------------------------------------------------------------------------------
// PTX structure

// One `.reg` declaration: `.reg .f32 %f<31>;` is {".f32", "%f", 31, true};
// `.reg .b32 temp;` is {".b32", "temp", 1, false}.
struct RegisterDecl {
  std::string type;
  std::string name;
  int count = 1;
  bool parameterized = false;

  friend bool operator==(const RegisterDecl&, const RegisterDecl&) = default;
};

// One `.entry` (kernel) or `.func` (device function) of a module.
struct PtxFunction {
  std::string name;
  bool is_entry = false;
  bool is_definition = true;               // false for a prototype (`.func ... ;`)
  std::string linkage;                     // ".visible", ".extern", ".weak" or ""
  std::vector<std::string> return_params;  // ".param .b32 func_retval0"
  std::vector<std::string> params;         // ".param .u64 gelu_param_0"
  std::vector<std::string> directives;     // performance directives: ".maxntid 256, 1, 1"
  std::vector<RegisterDecl> registers;     // every `.reg` in the body, nested blocks included
  std::vector<std::string> body;           // lines between the braces, comments removed, trimmed
};

// A PTX module: its module-level statements (`.version`, `.target`, globals, `.file`,
// `.section` blocks, one entry each, in order) and its functions, in order.
struct KJIT_API PtxModule {
  std::string version;       // "9.0"
  std::string target;        // "sm_90" (", debug" etc. removed)
  int address_size = 0;
  std::vector<std::string> directives;
  std::vector<PtxFunction> functions;

  // The function with this name (definitions before prototypes), or nullptr.
  const PtxFunction* find(std::string_view name) const;
  // The names of the kernels (`.entry` definitions), in order.
  std::vector<std::string> kernel_names() const;
};

// Splits PTX text into its functions and module-level statements. Never throws.
KJIT_API PtxModule parse_ptx(std::string_view ptx);

// The canonical text of a module: no comments, no debug sections / `.loc` / `.file`, no
// labels that nothing jumps to, whitespace collapsed, and virtual registers (%r, %f, %rd, %p,
// ... per declared class, in order of first appearance) and labels ($L0, $L1, ...) renumbered
// within each function, so that two builds that differ only in numbering give equal text.
KJIT_API PtxModule normalized(const PtxModule& module);
KJIT_API std::string normalize(std::string_view ptx);
// PTX text of a module (one statement per line; what normalize() returns).
KJIT_API std::string to_ptx(const PtxModule& module);
// The module-level statements and the one function named `name` of a PTX text, as PTX. `name`
// is the function's name in the PTX or, for a C++ function, its plain name ("square" for
// _Z6squarePfi, "kjit::gelu<float>"). Throws UsageError listing the kernels there are when there
// is no such function, and the declarations when the plain name is overloaded.
KJIT_API std::string function_ptx(std::string_view ptx, std::string_view name);

// ---------------------------------------------------------------------------------------------
// Resource usage

// One function's resources, as ptxas reports them with -Xptxas=-v (NVRTC: "-Xptxas=-v"), and
// (resource_usage(), diff()) what the cubin says where CUDA 13's ptxas no longer reports it.
struct ResourceUsage {
  std::string function;          // as in the PTX and cubin: "_Z6squarePfi", "gelu"
  std::string name;              // demangled, as the profiler shows it: "square" ("square(float*, int)"
                                 // where two functions share the plain name), "gelu"
  std::string arch;              // "sm_90" when ptxas named it
  bool is_entry = false;         // "Compiling entry function ..." seen
  int registers = 0;
  int barriers = 0;
  std::uint64_t stack_frame = 0;      // bytes per thread
  std::uint64_t spill_stores = 0;     // bytes
  std::uint64_t spill_loads = 0;      // bytes
  std::uint64_t cumulative_stack = 0; // bytes
  std::uint64_t shared = 0;           // static shared memory (smem), bytes
  std::optional<std::uint64_t> constant;  // the function's constant banks (ptxas's cmem[N], the cubin's
                                          // .nv.constantN sections), bytes; empty when unknown
  std::optional<std::uint64_t> local;     // local memory per thread with callees' frames (lmem; the
                                          // driver's LOCAL_SIZE_BYTES), bytes; empty when unknown
  std::optional<int> max_threads_per_block;  // the driver's, with a device of the arch; else from the cubin:
                                             // the launch bounds and the registers; empty when unknown

  bool spills() const noexcept { return spill_stores > 0 || spill_loads > 0; }
  friend bool operator==(const ResourceUsage&, const ResourceUsage&) = default;
};

// Every function ptxas described in a compile log, in order. Never throws.
KJIT_API std::vector<ResourceUsage> parse_ptxas_log(std::string_view log);
// The usage of one function (its name in the PTX, or its demangled `name`), or nullopt.
KJIT_API std::optional<ResourceUsage> find_usage(const std::vector<ResourceUsage>& usage, std::string_view function);

// `options` with "-Xptxas=-v" added (unless there) when ptxas runs (a real or native arch), so
// that ptxas reports each function's resources in the compile log; a virtual arch's unchanged.
//   auto usage = inspect::resource_usage(rt.compile(p, inspect::with_resource_report(o)));
KJIT_API CompileOptions with_resource_report(CompileOptions options);
// What ptxas reported in `result`'s log, completed from its cubin (local and constant memory,
// max threads per block from the launch bounds and registers), with the driver's max threads per
// block when a device of the result's arch is present. Throws UsageError for a result of a
// virtual arch (PTX only: ptxas did not run), and for one compiled without the report (its
// functions' spills are unknown: compile with with_resource_report).
KJIT_API std::vector<ResourceUsage> resource_usage(const CompileResult& result);

// A fixed-width table (function, regs, spills, stack, smem, cmem, lmem, max threads; "-" for what is
// unknown) or JSON (null for what is unknown; "function" the demangled name, "symbol" the PTX's).
KJIT_API std::string resources_table(const std::vector<ResourceUsage>& usage);
KJIT_API std::string resources_json(const std::vector<ResourceUsage>& usage);

// ---------------------------------------------------------------------------------------------
// Summary

// What one function consists of.
struct KJIT_API KernelSummary {
  std::string name;
  bool is_entry = false;
  std::map<std::string, int> opcodes;  // full opcode with modifiers ("ld.global.f32") -> count
  std::vector<RegisterDecl> registers;
  std::optional<ResourceUsage> resources;

  int instruction_count() const;
  // Counts grouped by base opcode ("ld.global.f32" -> "ld").
  std::map<std::string, int> base_opcodes() const;
  int count(std::string_view opcode) const;  // full opcode; 0 when absent
  // Sum over every opcode that starts with `prefix` ("ex2.approx" counts ex2.approx.ftz.f32).
  int count_prefix(std::string_view prefix) const;
};

// "ld.global.f32" -> "ld"; "@%p1 bra" is not an opcode (pass the opcode alone).
KJIT_API std::string base_opcode(std::string_view opcode);

// Summaries of every function defined in `ptx`; resources attached from a ptxas log when
// given (as from CompileResult::log with -Xptxas=-v).
KJIT_API std::vector<KernelSummary> summarize(std::string_view ptx, std::string_view ptxas_log = {});
KJIT_API KernelSummary summarize(const PtxFunction& function);

enum class Grouping { opcode, base_opcode };

// One number in two builds.
struct CountDelta {
  std::string key;
  long long a = 0;
  long long b = 0;
  long long delta() const noexcept { return b - a; }
};

// What changed between two summaries of one function: opcodes whose count changed,
// register classes whose declared count changed, resources that changed.
struct KJIT_API SummaryDelta {
  long long instructions_a = 0;
  long long instructions_b = 0;
  std::vector<CountDelta> opcodes;
  std::vector<CountDelta> registers;
  std::vector<CountDelta> resources;  // "registers", "spill_stores", "shared", ...

  bool empty() const noexcept { return opcodes.empty() && registers.empty() && resources.empty(); }
  const CountDelta* find_opcode(std::string_view key) const;
};

KJIT_API SummaryDelta compare(const KernelSummary& a, const KernelSummary& b, Grouping grouping = Grouping::opcode);

// ---------------------------------------------------------------------------------------------
// Diff

enum class Color { never, always };

struct DiffOptions {
  bool raw = false;                 // diff the PTX as it is (comments and numbering included)
  Grouping grouping = Grouping::opcode;
  int context = 3;                  // lines of context in the unified diff (as dtl does: 3)
  std::string a_label = "a";
  std::string b_label = "b";
};

// One function in two builds.
struct FunctionDiff {
  std::string name;
  bool is_entry = false;
  bool in_a = true;
  bool in_b = true;
  KernelSummary a;                 // empty when !in_a
  KernelSummary b;
  SummaryDelta summary;
  std::string unified;             // unified diff of the (normalized) PTX; empty when equal

  bool equal() const noexcept { return in_a && in_b && unified.empty() && summary.empty(); }
};

struct KJIT_API DiffResult {
  std::string a_label;
  std::string b_label;
  std::string module_unified;              // module-level statements (version, target, globals)
  std::vector<FunctionDiff> functions;     // in a's order, then those only in b

  // True when both builds have functions and no difference; two builds without a function (a
  // file of templates nothing instantiates) are never equal: there was nothing to compare.
  bool equal() const noexcept;
  // Human-readable: per function a summary with deltas and the unified diff.
  std::string to_text(Color color = Color::never) const;
  // {"equal": bool, "a": label, "b": label, "module_diff": "...", "functions": [...]}
  std::string to_json() const;
};

KJIT_API DiffResult diff(std::string_view a_ptx, std::string_view b_ptx, const DiffOptions& options = {});
// As above, with ptxas resource usage taken from each result's log when it has it.
KJIT_API DiffResult diff(const CompileResult& a, const CompileResult& b, const DiffOptions& options = {});

// ---------------------------------------------------------------------------------------------
// SASS

// nvdisasm or cuobjdump, searched in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, the
// toolkit kjit was built with, then PATH; nullopt when neither is there.
KJIT_API std::optional<std::filesystem::path> find_disassembler();
// Why SASS is unavailable ("" when find_disassembler() finds one).
KJIT_API std::string disassembler_unavailable_reason();

// SASS of a cubin (all functions, or one when `function` is not empty: as named in the cubin,
// or, with a CompileResult, a C++ function's plain name as for function_ptx()). Throws UsageError
// when there is no cubin, UnavailableError when there is no disassembler, and IoError when the
// tool fails.
KJIT_API std::string sass(std::string_view cubin, std::string_view function = {});
KJIT_API std::string sass(const CompileResult& result, std::string_view function = {});

// ---------------------------------------------------------------------------------------------
// Templates

// The qualified names of the template kernels a source declares ("kjit::gelu" for a
// `template <class T> __global__ void gelu(...)` inside `namespace kjit`), in order: what a name
// expression for Program::instantiate starts with ("kjit::gelu<float>"). NVRTC makes no code for
// a template until it is named, and looks a name expression up from the global namespace. A scan
// of the text (comments, strings and preprocessor lines skipped), not a parse; never throws.
KJIT_API std::vector<std::string> template_kernels(std::string_view source);
// The template kernels of `source` (template_kernels) that have no instance among the kernels of
// `ptx` (no --instantiate or Program::instantiate named one, and no explicit instantiation made
// one), qualified, in order. Never throws.
KJIT_API std::vector<std::string> uninstantiated_templates(std::string_view source, std::string_view ptx);

// ---------------------------------------------------------------------------------------------
// Dump

enum class DumpSass { if_available, no };

// Writes <dump_root>/<program-name-sanitized>-<first 16 hex of key>/ with: source.cu,
// headers/ and headers.txt, options.txt, info.json (program, arch, key, outcome), kernel.ptx,
// kernel.cubin (when there is one), compile.log, lowered_names.txt, resources.txt/.json
// (when the log has ptxas output), kernel.sass or sass-unavailable.txt. Files already there
// are replaced. Returns the folder. Throws IoError naming the file it could not write.
KJIT_API std::filesystem::path write_dump(const std::filesystem::path& dump_root, const Program& program,
                                 const CompileResult& result, DumpSass dump_sass = DumpSass::if_available);

}  // namespace kjit::inspect
