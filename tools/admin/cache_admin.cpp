// kjit::Cache over a cache folder's parts (cache::StoreFolder: its maintenance and persistent stats).
#include <kjit/tools/cache.hpp>
#include <kjit/error.hpp>

#include "tools/admin/cache_impl.hpp"

#include "core/spi/base.hpp"
#include "core/spi/cache.hpp"
#include "core/spi/system.hpp"
#include "core/spi/tune.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace kjit {

Cache::Cache(std::filesystem::path dir, std::uint64_t max_size, bool shared)
    : m_impl(std::make_unique<Impl>(cache::StoreConfig{dir.empty() ? base::cache_dir_from_environment() : dir.string(), max_size,
                                                       shared ? cache::DirSharing::group
                                                              : cache::DirSharing::private_to_user})) {}
Cache::~Cache() = default;
Cache::Cache(Cache&&) noexcept = default;
Cache& Cache::operator=(Cache&&) noexcept = default;

std::filesystem::path Cache::dir() const { return m_impl->folder->config().dir; }

CacheStats Cache::stats() {
  auto& folder = m_impl->trusted();
  cache::StatsSnapshot s = folder.stats.read();
  cache::Usage u = folder.maintenance.usage();
  CacheStats out;
  out.dir = dir();
  out.entries = u.entries;
  out.bytes = u.bytes;
  out.max_size = folder.folder->config().max_size;
#define KJIT_COPY_COUNTER(name) out.name = s.name;
  KJIT_CACHE_COUNTERS(KJIT_COPY_COUNTER)
#undef KJIT_COPY_COUNTER
  return out;
}

namespace {

std::vector<std::pair<std::filesystem::path, std::string>> skipped_of(const std::vector<cache::Skipped>& skipped) {
  std::vector<std::pair<std::filesystem::path, std::string>> out;
  for (const auto& s : skipped) out.emplace_back(s.path, s.why);
  return out;
}

std::vector<std::pair<std::filesystem::path, std::string>> not_removed_of(const std::vector<cache::NotRemoved>& list) {
  std::vector<std::pair<std::filesystem::path, std::string>> out;
  for (const auto& n : list) out.emplace_back(n.path, n.why);
  return out;
}

}  // namespace

std::vector<CacheEntryInfo> Cache::list() const { return list_with_skipped().entries; }

namespace {

// What an entry says of itself: program, arch and section kinds (meta JSON; a tuner's name).
void describe(CacheEntryInfo& info, const cache::Key& key) {
  const system::FileContent f = system::read_file(info.path);
  if (!f.ok()) return;
  const cache::InPlaceParse parsed = cache::parse_in_place(f.bytes);
  if (!parsed.error.empty() || parsed.key != key) return;
  for (const cache::SectionRef& s : parsed.sections) {
    const std::string_view bytes = std::string_view(f.bytes).substr(s.offset, s.size);
    switch (s.kind) {
    case cache::SectionKind::cubin: info.kinds.emplace_back("cubin"); break;
    case cache::SectionKind::ptx: info.kinds.emplace_back("ptx"); break;
    case cache::SectionKind::ltoir: info.kinds.emplace_back("ltoir"); break;
    case cache::SectionKind::tuning:
      info.kinds.emplace_back("tuning");
      if (auto d = tune::decode_decision(key, f.bytes)) info.program = d->name;
      break;
    case cache::SectionKind::meta: {
      const auto meta = nlohmann::json::parse(bytes, nullptr, false);
      if (meta.is_object()) {
        info.program = meta.value("program", std::string());
        info.arch = meta.value("arch", std::string());
        if (const auto o = meta.find("options"); o != meta.end() && o->is_array()) {
          for (const auto& option : *o) {
            if (option.is_string()) info.options.push_back(option.get<std::string>());
          }
        }
        if (const auto n = meta.find("instantiate"); n != meta.end() && n->is_array()) {
          for (const auto& expression : *n) {
            if (expression.is_string()) info.name_expressions.push_back(expression.get<std::string>());
          }
        }
      }
      break;
    }
    case cache::SectionKind::log:
    case cache::SectionKind::lowered_names:
    case cache::SectionKind::kernel_types: break;
    }
  }
}

}  // namespace

CacheListResult Cache::list_with_skipped() const {
  auto l = m_impl->trusted().maintenance.list_with_skipped();
  CacheListResult out;
  for (const auto& e : l.entries) {
    CacheEntryInfo info{e.key.hex(), e.path, e.size, e.last_use, {}, {}, {}, {}, {}};
    describe(info, e.key);
    out.entries.push_back(std::move(info));
  }
  out.skipped = skipped_of(l.skipped);
  return out;
}

std::vector<CacheTuningInfo> Cache::tuning_decisions() const {
  std::vector<CacheTuningInfo> out;
  for (const auto& e : m_impl->trusted().maintenance.list_with_skipped().entries) {
    const system::FileContent f = system::read_file(e.path);
    if (!f.ok()) continue;  // removed meanwhile
    auto d = tune::decode_decision(e.key, f.bytes);
    if (!d) continue;  // a compile result, or not readable now
    out.push_back({e.key.hex(), e.path, e.last_use, d->device, d->tuning_key, d->name, d->chosen, d->labels, d->median_us,
                   tune::explain_sol(*d)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_use > b.last_use; });
  return out;
}

CacheVerifyResult Cache::verify() {
  auto v = m_impl->trusted().maintenance.verify();
  m_impl->stats.flush();
  return {v.ok, v.damaged, skipped_of(v.skipped), not_removed_of(v.not_removed)};
}

CachePruneResult Cache::prune(std::optional<std::uint64_t> max_size, std::optional<std::chrono::seconds> older_than) {
  auto p = m_impl->trusted().maintenance.prune(max_size.value_or(m_impl->folder->config().max_size), older_than);
  m_impl->stats.flush();
  return {p.removed_entries, p.removed_bytes, p.kept_entries, p.kept_bytes, skipped_of(p.skipped),
          not_removed_of(p.not_removed)};
}

CachePruneResult Cache::clear() {
  auto p = m_impl->trusted().maintenance.clear();
  return {p.removed_entries, p.removed_bytes, p.kept_entries, p.kept_bytes, skipped_of(p.skipped),
          not_removed_of(p.not_removed)};
}

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  if (auto v = system::parse_size(text)) return *v;
  throw UsageError(fmt::format("reading {} \"{}\": expected a size such as 2G, 512M, 1.5GiB or 1048576", what, text));
}

std::string redact_remote_url(std::string_view url) { return cache::redact_url(url); }

RemotePing ping_remote_cache(const std::string& url, std::chrono::milliseconds timeout,
                             const std::filesystem::path& http_auth_file) {
  auto list = cache::parse_remote_list(url);
  if (!list) throw UsageError(list.error().message);
  if (list->shards.empty() && list->levels.empty()) throw UsageError("no remote cache to ping: the address is empty");
  cache::HttpCredentials credentials;
  if (!http_auth_file.empty()) {
    auto c = cache::read_http_credentials(http_auth_file.native());
    if (!c) throw UsageError(c.error().message);
    credentials = std::move(*c);
  }
  // In the tier's order: the Redis shards, then the HTTP levels; every address checked first.
  std::vector<std::pair<const cache::RemoteListEntry*, std::unique_ptr<cache::RemoteStore>>> stores;
  for (const auto* group : {&list->shards, &list->levels}) {
    for (const cache::RemoteListEntry& entry : *group) {
      auto store = cache::open_remote_store(entry.url, {cache::RemoteTimeouts{timeout, timeout}, credentials});
      if (!store) throw UsageError(store.error().message);
      stores.emplace_back(&entry, std::move(*store));
    }
  }
  RemotePing out;
  out.url = redact_remote_url(url);
  out.ok = true;
  const auto start = std::chrono::steady_clock::now();
  for (auto& [entry, store] : stores) {
    RemoteServerPing p;
    p.url = entry->name;
    p.shard = cache::remote_backend_of(entry->url)->place == cache::RemotePlace::shard;
    p.weight = entry->weight;
    const auto asked = std::chrono::steady_clock::now();
    auto answer = store->ping();
    p.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - asked);
    if (answer) {
      p.ok = true;
      p.server = *answer;
      p.refusing_writes = store->refuses_writes().value_or("");
    } else {
      p.message = answer.error().message;
    }
    std::string& text = answer ? out.server : out.message;
    text += (text.empty() ? "" : "; ") + (answer ? *answer : answer.error().message);
    out.ok = out.ok && answer.has_value();
    out.servers.push_back(std::move(p));
  }
  out.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  return out;
}

std::chrono::seconds parse_duration(std::string_view text, std::string_view what) {
  if (auto v = system::parse_duration(text)) return *v;
  throw UsageError(fmt::format("reading {} \"{}\": expected a duration such as 30s, 10m, 2h, 7d or 2w", what, text));
}

}  // namespace kjit
