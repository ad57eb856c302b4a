// kjit::closest_names: "did you mean" candidates by edit distance.
#include "core/spi/base.hpp"

#include <kjit/tools/closest_names.hpp>

#include <algorithm>
#include <limits>

namespace kjit {

std::vector<std::string> closest_names(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty() || std::find(candidates.begin(), candidates.end(), word) != candidates.end()) return {};
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::size_t best = std::numeric_limits<std::size_t>::max();
  std::vector<std::string> nearest;
  for (const std::string& c : candidates) {
    const std::size_t d = base::edit_distance(word, c);
    if (d > limit || d > best) continue;
    if (d < best) nearest.clear();
    best = d;
    if (std::find(nearest.begin(), nearest.end(), c) == nearest.end()) nearest.push_back(c);
  }
  if (!nearest.empty() || word.size() < 3) return nearest;
  for (const std::string& c : candidates) {
    if (c.starts_with(word) && std::find(nearest.begin(), nearest.end(), c) == nearest.end()) nearest.push_back(c);
  }
  return nearest;
}

}  // namespace kjit
