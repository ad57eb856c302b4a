#include "tools/inspect/unified_diff.hpp"

#include <dtl/dtl.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace kjit::inspect {

std::string unified_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                         std::string_view a_name, std::string_view b_name, int context) {
  if (a == b) return {};
  dtl::Diff<std::string, std::vector<std::string>> d(a, b);
  if (a.size() + b.size() > 20000) d.onHuge();
  d.compose();
  const auto ses = d.getSes().getSequence();
  const std::size_t n = ses.size();
  // Line numbers (1-based) of the a and b lines before each position.
  std::vector<long long> a_before(n + 1, 0), b_before(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto type = ses[i].second.type;
    a_before[i + 1] = a_before[i] + (type != dtl::SES_ADD ? 1 : 0);
    b_before[i + 1] = b_before[i] + (type != dtl::SES_DELETE ? 1 : 0);
  }
  std::vector<std::size_t> changes;
  for (std::size_t i = 0; i < n; ++i) {
    if (ses[i].second.type != dtl::SES_COMMON) changes.push_back(i);
  }
  if (changes.empty()) return {};
  const std::size_t ctx = static_cast<std::size_t>(std::max(context, 0));
  std::string out = fmt::format("--- {}\n+++ {}\n", a_name, b_name);
  std::size_t k = 0;
  while (k < changes.size()) {
    const std::size_t first = changes[k];
    std::size_t last = first;
    while (k + 1 < changes.size() && changes[k + 1] - last <= 2 * ctx + 1) last = changes[++k];
    ++k;
    const std::size_t begin = first > ctx ? first - ctx : 0;
    const std::size_t end = std::min(n, last + ctx + 1);
    const long long a_len = a_before[end] - a_before[begin];
    const long long b_len = b_before[end] - b_before[begin];
    const long long a_start = a_len ? a_before[begin] + 1 : a_before[begin];
    const long long b_start = b_len ? b_before[begin] + 1 : b_before[begin];
    out += fmt::format("@@ -{},{} +{},{} @@\n", a_start, a_len, b_start, b_len);
    for (std::size_t i = begin; i < end; ++i) {
      const auto type = ses[i].second.type;
      out += type == dtl::SES_ADD ? '+' : type == dtl::SES_DELETE ? '-' : ' ';
      out += ses[i].first;
      out += '\n';
    }
  }
  return out;
}

}  // namespace kjit::inspect
