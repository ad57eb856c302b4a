// kjit::compile::host_functions: host code NVRTC refuses, found by asking NVRTC and left out of
// what it compiles. nvcc compiles a function without an execution space, or marked __host__, and a
// namespace-scope variable without a memory space for the host only; NVRTC, which has no host,
// refuses each with an error that names its file, line and column ("host functions are not allowed
// in JIT mode", "host variables are not allowed in JIT mode"). NvrtcCompiler reads those errors
// (find_host_code), leaves out each declaration they name, in the program and in every user header
// it reaches (leave_out_host_code: the whole declaration, found from NVRTC's column with the one
// lexer, every line kept in its place), and compiles again, as often as new ones appear. What is left
// out is proven host code: its text holds no kernel, no device variable and no device function (only
// a __device__ lambda inside a host function, which goes with it), a macro that made a function
// expands to none either; anything else leaves the program as it is, with NVRTC's errors and kjit's
// note (explain_host_definitions). The log names every function and variable left out, and every
// template kernel their text instantiated (nvcc compiles those instances; kjit cannot without the
// host code: --instantiate keeps them). Never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kjit::compile {

// One declaration NVRTC refused as host code.
struct HostDeclaration {
  enum class Kind : std::uint8_t { function, variable };
  std::string file;  // as the log names it
  int line = 0;      // from 1
  int column = 0;    // from 1: NVRTC's caret (the name, or the macro that made it)
  std::string name;  // the identifier at the caret ("" when none: a destructor's '~')
  Kind kind = Kind::function;
  bool explicit_host = false;  // marked __host__
  bool is_constexpr = false;   // a constexpr function: nvcc lets device code call it (--expt-relaxed-constexpr)
};

struct HostCodeErrors {
  std::vector<HostDeclaration> declarations;  // every "not allowed in JIT mode" error of host code
  bool only_these = false;                    // the log has no other error
};

HostCodeErrors find_host_code(std::string_view log);

// One declaration left out.
struct LeftOut {
  std::string file;
  int line = 0;
  std::string name;
  HostDeclaration::Kind kind = HostDeclaration::Kind::function;
  std::string macro;                       // the macro whose invocation made it, or ""
  std::vector<std::string> instantiations;  // template kernels its text names, as written ("k<float, 128>")
  int device_lambdas = 0;                  // __device__ lambdas inside it (CCCL algorithms' kernels)
};

struct HostCodeLeftOut {
  std::string text;  // the file without them: each declaration's bytes blanked, newlines and directives kept
  std::vector<LeftOut> left_out;
};

// What a file's text says beyond itself: the function-like macros of every text of the program
// (a host function made by a macro of another header) and its template kernels' names.
struct ProgramContext {
  std::vector<std::string> function_macros;  // names of function-like macros whose expansion holds no device code
  std::vector<std::string> device_macros;    // names of macros whose replacement holds a device keyword
  std::vector<std::string> template_kernels; // unqualified names of template kernels
  std::vector<std::string> qualified;        // the same, with their namespaces ("ops::gelu")
};

// The macros and template kernels of `texts` (the program and every header it reaches).
ProgramContext program_context(const std::vector<std::string_view>& texts);

// `text` (the file `file`) without the declarations of `found` in that file, or why they cannot
// be left out (a declaration that cannot be found from its line and column, one whose text holds
// device code). Declarations of other files and constexpr functions are passed over; nothing to
// leave out gives an empty list.
std::variant<HostCodeLeftOut, std::string> leave_out_host_code(std::string_view text, std::string_view file,
                                                                const std::vector<HostDeclaration>& found,
                                                                const ProgramContext& context);

// The name expressions that instantiate what host code left out instantiated: each written instance
// ("k<float, 128>") with its kernel's namespaces ("ops::k<float, 128>"). NvrtcCompiler compiles them as
// nvcc does; an expression NVRTC cannot resolve at namespace scope (a template parameter, a local
// constant) is named in the warning instead.
std::vector<std::string> instantiation_expressions(const std::vector<LeftOut>& left_out, const ProgramContext& context);

// kjit's note for the log when host code was left out and the program compiled: every function and
// variable; the template kernel instances it instantiated that kjit compiled by name (`kept`, as
// instantiation_expressions gave them), and a warning for the others, with the --instantiate line
// that keeps each.
std::string explain_left_out(const std::vector<LeftOut>& left_out, const ProgramContext& context,
                             const std::vector<std::string>& kept);

// kjit's note for the log when host code is refused (it could not be left out, or the program does
// not compile without it): which functions and variables, why, the ways out. `why_kept`: why kjit
// did not leave it out, or "".
std::string explain_host_definitions(const std::vector<HostDeclaration>& found, std::string_view why_kept);

// kjit's note for a log whose errors are CCCL's host code (CUB's device-wide algorithms, Thrust's,
// "not allowed in JIT mode" in a file under cub/ or thrust/): which headers to include instead.
// "" for any other log.
std::string explain_cccl_host_code(std::string_view log);

// kjit's note when constexpr host functions were compiled as device functions (-default-device).
std::string explain_host_declarations(const std::vector<HostDeclaration>& found);

// Whether `file` (as a log names it) is CUB's or Thrust's: host code NVRTC refuses there is CCCL's host API.
bool is_cccl_host_file(std::string_view file);

}  // namespace kjit::compile
