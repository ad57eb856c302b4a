#include "core/driver/ptx_variables.hpp"

#include "core/compile/kernel_types.hpp"

#include <algorithm>

namespace kjit::driver {

std::vector<std::string> ptx_variables(std::string_view ptx) {
  std::vector<std::string> names;
  std::size_t pos = 0;
  while (pos < ptx.size()) {
    std::size_t end = ptx.find('\n', pos);
    if (end == std::string_view::npos) end = ptx.size();
    std::string_view line = ptx.substr(pos, end - pos);
    pos = end + 1;
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    for (std::string_view linkage : {".visible ", ".extern ", ".weak "}) {
      if (line.starts_with(linkage)) line.remove_prefix(linkage.size());
    }
    if (!line.starts_with(".global ") && !line.starts_with(".const ")) continue;
    line = line.substr(0, std::min(line.find('='), line.find(';')));
    line = line.substr(0, std::min(line.find('['), line.size()));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    const std::size_t space = line.find_last_of(" \t");
    if (space == std::string_view::npos || space + 1 >= line.size()) continue;
    const std::string_view name = line.substr(space + 1);
    if (!compile::KernelTypes::is_added_symbol(name)) names.emplace_back(name);  // kjit's type query
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}


}  // namespace kjit::driver
