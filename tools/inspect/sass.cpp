// SASS through the CUDA toolkit's disassemblers (nvdisasm, else cuobjdump -sass), run on the
// cubin written to a temporary file.
#include "core/spi/base.hpp"
#include "tools/inspect/command.hpp"
#include "tools/inspect/function_names.hpp"
#include "tools/inspect/ptx_text.hpp"

#include <kjit/error.hpp>
#include <kjit/tools/inspect.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#ifndef KJIT_CUDA_BIN_DIR
#define KJIT_CUDA_BIN_DIR ""
#endif

namespace kjit::inspect {

namespace {

// Each folder once: the toolkit roots often name one folder several ways (through a symbolic
// link such as /usr/local/cuda, or with "..").
std::vector<std::filesystem::path> search_dirs() {
  std::vector<std::filesystem::path> dirs;
  auto add = [&dirs](const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::path same = std::filesystem::weakly_canonical(dir, ec);
    if (ec || same.empty()) same = dir.lexically_normal();
    if (std::find(dirs.begin(), dirs.end(), same) == dirs.end()) dirs.push_back(std::move(same));
  };
  for (const auto& root : base::toolkit_roots()) add(root / "bin");
  if (std::string_view(KJIT_CUDA_BIN_DIR).size()) add(KJIT_CUDA_BIN_DIR);
  if (const char* path = std::getenv("PATH")) {
    std::string_view p = path;
    while (!p.empty()) {
      const std::size_t colon = p.find(':');
      const std::string_view dir = p.substr(0, colon);
      if (!dir.empty()) add(std::string(dir));
      if (colon == std::string_view::npos) break;
      p.remove_prefix(colon + 1);
    }
  }
  return dirs;
}

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

// A cubin in a temporary file, removed when this goes.
class TempCubin {
public:
  explicit TempCubin(std::string_view bytes) {
    std::string pattern = (std::filesystem::temp_directory_path() / "kjit-sass-XXXXXX.cubin").string();
    const int fd = mkstemps(pattern.data(), 6);
    if (fd < 0) throw IoError(fmt::format("disassembling cubin: cannot create a temporary file {}: {}", pattern, std::strerror(errno)));
    m_path = pattern;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        close(fd);
        throw IoError(fmt::format("disassembling cubin: cannot write {}: {}", m_path.string(), std::strerror(err)));
      }
      done += static_cast<std::size_t>(n);
    }
    close(fd);
  }
  ~TempCubin() {
    std::error_code ec;
    std::filesystem::remove(m_path, ec);
  }
  TempCubin(const TempCubin&) = delete;
  TempCubin& operator=(const TempCubin&) = delete;
  const std::filesystem::path& path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

// The part of nvdisasm output for one function: its ".text.<name>" section, from the
// "//---- .text.<name> ----" banner (or the .section line) to the next section.
std::string nvdisasm_function(std::string_view out, std::string_view function) {
  std::string result;
  bool inside = false;
  const std::string marker = fmt::format(".text.{}", function);
  auto names_function = [&](std::string_view t) {
    const std::size_t at = t.find(marker);
    if (at == std::string_view::npos) return false;
    const std::size_t after = at + marker.size();
    return after == t.size() || t[after] == '"' || t[after] == ',' || t[after] == ' ' || t[after] == '\t';
  };
  for (std::string_view line : text::split_lines(out)) {
    const std::string_view t = text::trim(line);
    const bool banner = t.substr(0, 4) == "//--";
    if (banner || (text::starts_with_word(t, ".section") && !(inside && names_function(t)))) {
      inside = names_function(t);
    }
    if (inside) {
      result += line;
      result += '\n';
    }
  }
  return result;
}

// The part of cuobjdump -sass output for one function: from "Function : <name>" to the next.
std::string cuobjdump_function(std::string_view out, std::string_view function) {
  std::string result;
  bool inside = false;
  for (std::string_view line : text::split_lines(out)) {
    const std::string_view t = text::trim(line);
    if (t.substr(0, 8) == "Function") {
      const std::size_t colon = t.find(':');
      inside = colon != std::string_view::npos && text::trim(t.substr(colon + 1)) == function;
    }
    if (inside) {
      result += line;
      result += '\n';
    }
  }
  return result;
}

}  // namespace

std::optional<std::filesystem::path> find_disassembler() {
  const auto dirs = search_dirs();
  for (const char* tool : {"nvdisasm", "cuobjdump"}) {
    for (const auto& dir : dirs) {
      const auto candidate = dir / tool;
      if (executable(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

std::string disassembler_unavailable_reason() {
  if (find_disassembler()) return {};
  std::string searched;
  for (const auto& dir : search_dirs()) {
    if (!searched.empty()) searched += ", ";
    searched += dir.string();
  }
  return fmt::format("SASS is unavailable: neither nvdisasm nor cuobjdump was found (searched {}); they come "
                     "with the full CUDA toolkit (set CUDA_HOME to a toolkit that has them)",
                     searched);
}

std::string sass(std::string_view cubin, std::string_view function) {
  if (cubin.empty()) {
    throw UsageError("disassembling to SASS: there is no cubin (a virtual arch such as compute_90 yields PTX only; "
                     "compile for sm_XX)");
  }
  const auto tool = find_disassembler();
  if (!tool) throw UnavailableError("disassembling to SASS: " + disassembler_unavailable_reason());
  const TempCubin file(cubin);
  const bool nvdisasm = tool->filename() == "nvdisasm";
  const std::vector<std::string> argv = nvdisasm
                                            ? std::vector<std::string>{tool->string(), "-c", file.path().string()}
                                            : std::vector<std::string>{tool->string(), "-sass", file.path().string()};
  const CommandResult r = run_command(argv);
  if (r.exit_code != 0) {
    throw IoError(fmt::format("disassembling {} with {}: exit code {}: {}", file.path().string(), tool->string(),
                              r.exit_code, text::trim(r.output)));
  }
  if (function.empty()) return r.output;
  std::string part = nvdisasm ? nvdisasm_function(r.output, function) : cuobjdump_function(r.output, function);
  if (part.empty()) {
    throw UsageError(fmt::format("disassembling to SASS: the cubin has no function named {}", function));
  }
  return part;
}

std::string sass(const CompileResult& result, std::string_view function) {
  if (!result.has_cubin()) {
    throw UsageError(fmt::format("disassembling {} to SASS: the result for {} has no cubin (PTX only); compile "
                                 "for a real arch such as sm_90",
                                 result.program_name, result.arch.str()));
  }
  if (function.empty()) return sass(result.cubin, function);
  // A C++ kernel asked for by its plain name ("square" for _Z6squarePfi): the cubin's name.
  std::vector<std::string> symbols;
  for (const PtxFunction& f : parse_ptx(result.ptx).functions) {
    if (f.is_definition) symbols.push_back(f.name);
  }
  const std::optional<std::string> symbol = resolve_function(
      symbols, function, fmt::format("disassembling {} to SASS: selecting function \"{}\"", result.program_name, function));
  return sass(result.cubin, symbol.value_or(std::string(function)));
}

}  // namespace kjit::inspect
