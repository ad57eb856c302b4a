// kjit::compile::host_functions: what NVRTC's "host functions are not allowed in JIT mode"
// errors in a log are about. nvcc compiles a function without an execution space for the host;
// NVRTC, which has no host, refuses even a prototype that device code never calls. Each error
// names a line and a column (the function's name); the text from there tells a declaration
// ("void host_helper(int n);") from a definition ("void f() { ... }"). NvrtcCompiler compiles a
// program whose only errors are such declarations, or constexpr functions (which nvcc lets device
// code call with --expt-relaxed-constexpr), again with -default-device: they become device
// functions. Another definition stays an error, explained. Never throws.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

struct HostFunction {
  std::string file;  // as the log names it
  int line = 0;
  std::string name;  // the function's name, as written
  bool definition = false;
  bool is_constexpr = false;  // nvcc lets device code call it (--expt-relaxed-constexpr)
};

struct HostFunctionErrors {
  std::vector<HostFunction> functions;  // every "host functions are not allowed" error
  bool only_these = false;              // the log has no other error
};

// `source_of(file)`: the text of a file the log names (the program, an in-memory header, a file
// on disk), or nullopt; used when the error's own excerpt line does not show how the function
// ends.
HostFunctionErrors find_host_functions(
    std::string_view log, const std::function<std::optional<std::string>(const std::string&)>& source_of);

// `source` (the program `file`) with the bodies of its host function definitions among `functions`
// (not constexpr ones) replaced by ';': each becomes a declaration, and the lines keep their
// numbers (every newline of a body stays). nvcc compiles those functions for the host only; NVRTC
// then sees host declarations, which it compiles as device ones nothing calls. nullopt when
// there is none to replace. A body is found from the function's name on its line to the
// matching brace, comments, strings and character literals passed over.
std::optional<std::string> without_host_definitions(std::string_view source, std::string_view file,
                                                    const std::vector<HostFunction>& functions);

// kjit's note for the log when host function definitions were left out (the program compiled
// without them).
std::string explain_host_definitions_left_out(const std::vector<HostFunction>& functions, std::string_view file);

// kjit's note for the log when definitions are refused: which functions, why, the two ways out.
std::string explain_host_definitions(const std::vector<HostFunction>& functions);

// kjit's note for a log whose errors are CCCL's host code (CUB's device-wide algorithms, Thrust's,
// "not allowed in JIT mode" in a file under cub/ or thrust/): which headers to include instead.
// "" for any other log.
std::string explain_cccl_host_code(std::string_view log);

// kjit's note for the log when declarations were compiled as device declarations.
std::string explain_host_declarations(const std::vector<HostFunction>& functions);

}  // namespace kjit::compile
