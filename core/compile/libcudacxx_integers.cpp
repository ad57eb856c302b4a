#include "core/compile/libcudacxx_integers.hpp"

#include "core/base/source_file.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"

#include <algorithm>
#include <array>

namespace kjit::compile {
namespace {

// A preprocessor line as a directive: "#  include <cstdint>" gives "include <cstdint>"; "" when
// the line is no directive.
std::string directive(std::string_view line) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '#') return {};
  std::string out;
  bool space = false;
  for (++i; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The conditions libcu++ writes for "not NVRTC": CCCL 3's and 2.8's macro, CCCL 2's older one.
constexpr std::array<std::string_view, 3> k_not_nvrtc = {"if !_CCCL_COMPILER(NVRTC)", "ifndef _CCCL_COMPILER_NVRTC",
                                                         "if !defined(_CCCL_COMPILER_NVRTC)"};

}  // namespace

std::optional<std::string> with_host_integers(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string cond = directive(text.substr(pos, end - pos));
    const bool not_nvrtc = std::find(k_not_nvrtc.begin(), k_not_nvrtc.end(), cond) != k_not_nvrtc.end();
    if (not_nvrtc && end < text.size()) {
      std::size_t next_end = text.find('\n', end + 1);
      if (next_end == std::string_view::npos) next_end = text.size();
      if (directive(text.substr(end + 1, next_end - end - 1)) == "include <cstdint>") {
        std::string out(text.substr(0, pos));
        out += "#if 1 // kjit: the host's branch, as nvcc takes it (int64_t is long on LP64)";
        out.append(text.substr(end));
        return out;
      }
    }
    pos = end + 1;
  }
  return std::nullopt;
}

const std::vector<std::pair<std::string, std::string>>& libcudacxx_integer_headers() {
  static const std::vector<std::pair<std::string, std::string>> headers = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string_view name : {"cuda/std/cstdint", "cuda/std/__cuda/cstdint_prelude.h"}) {
      for (const auto& dir : NvrtcInfo::toolkit_include_dirs()) {
        system::FileContent f = base::read_source_file(dir / name);
        if (!f.ok()) continue;
        if (auto served = with_host_integers(f.bytes)) out.emplace_back(std::string(name), std::move(*served));
        break;
      }
    }
    return out;
  }();
  return headers;
}

}  // namespace kjit::compile
