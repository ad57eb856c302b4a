#include "core/cache/remote/remote_levels.hpp"

#include "core/cache/remote/remote_store.hpp"

#include <fmt/format.h>

namespace kjit::cache {

system::Result<RemoteLevelUrls> split_remote_levels(std::string_view list) {
  RemoteLevelUrls out;
  std::size_t index = 0;
  for (std::size_t start = 0; start <= list.size(); ++index) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view entry = list.substr(start, comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (entry.empty()) {
      return system::Failure{fmt::format("remote cache list \"{}\": entry {} is empty (expected URLs separated by commas)",
                                 redact_url(list), index + 1)};
    }
    (is_http_url(entry) ? out.http : out.redis).emplace_back(entry);
    start = comma + 1;
  }
  return out;
}

}  // namespace kjit::cache
