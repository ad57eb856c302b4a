#include "core/cache/remote/remote_list.hpp"

#include "core/cache/remote/remote_backend.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <set>

namespace kjit::cache {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

bool is_scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
         c == '.';
}

// Whether `s` starts (after blanks) with "scheme://".
bool starts_with_scheme(std::string_view s) {
  s = trim(s);
  std::size_t i = 0;
  while (i < s.size() && is_scheme_char(s[i])) ++i;
  return i > 0 && s.substr(i, 3) == "://";
}

// The entries: split at each comma that an address follows ("scheme://"), so that a comma in a
// password stays in its address; a comma followed by anything else stays in its entry, whose
// check then refuses it (an empty entry, a trailing comma, "redis://a, b").
std::vector<std::string_view> split_entries(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ',' && starts_with_scheme(text.substr(i + 1))) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(text.substr(start));
  return out;
}

// One address with its password redacted: the credentials are what comes before the last '@'
// after the scheme (as the backends read them).
std::string redact_one(std::string_view url) {
  const auto scheme = url.find("://");
  const std::size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const auto at = url.rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  const std::string_view cred = url.substr(start, at - start);
  const auto colon = cred.find(':');
  const std::string_view user = colon == std::string_view::npos ? std::string_view() : cred.substr(0, colon);
  return fmt::format("{}{}:***{}", url.substr(0, start), user, url.substr(at));
}

system::Failure bad_entry(std::string_view entry, std::string_view why) {
  return system::Failure{fmt::format("remote cache entry \"{}\": {} (expected {} addresses, comma-separated, a "
                                     "shard's optionally weighted: redis://a,redis://b(2))",
                                     redact_one(trim(entry)), why, remote_backend_forms())};
}

// "redis://, rediss://, unix://": the schemes whose addresses are shards.
std::string shard_schemes() {
  std::string out;
  for (const RemoteBackend& row : remote_backends()) {
    if (row.place != RemotePlace::shard) continue;
    out += fmt::format("{}{}://", out.empty() ? "" : ", ", row.scheme);
  }
  return out;
}

}  // namespace

std::string redact_remote_list(std::string_view text) {
  std::string out;
  bool first = true;
  for (std::string_view entry : split_entries(text)) {
    if (!first) out += ',';
    first = false;
    out += redact_one(entry);
  }
  return out;
}

system::Result<RemoteList> parse_remote_list(std::string_view text) {
  RemoteList list;
  if (trim(text).empty()) return list;
  std::set<std::string> names;
  for (std::string_view raw : split_entries(text)) {
    std::string_view entry = trim(raw);
    if (entry.empty()) return bad_entry(raw, "it is empty");
    RemoteListEntry e;
    bool weighted = false;
    if (entry.back() == ')') {
      const auto open = entry.rfind('(');
      if (open == std::string_view::npos) return bad_entry(entry, "a \")\" without its \"(\"");
      const std::string_view w = trim(entry.substr(open + 1, entry.size() - open - 2));
      double weight = 0;
      auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), weight);
      if (w.empty() || ec != std::errc{} || p != w.data() + w.size() || !std::isfinite(weight) || weight <= 0) {
        return bad_entry(entry, fmt::format("the weight \"{}\" is not a positive number", w));
      }
      e.weight = weight;
      weighted = true;
      entry = trim(entry.substr(0, open));
    }
    const auto scheme_end = entry.find("://");
    if (scheme_end == std::string_view::npos || !starts_with_scheme(entry)) {
      return bad_entry(entry, "not an address (scheme://...)");
    }
    const std::string_view scheme = entry.substr(0, scheme_end);
    // After the credentials, an address holds no comma: one there is an empty entry, a trailing
    // comma, or two addresses run together.
    const auto at = entry.rfind('@');
    const std::size_t host = at == std::string_view::npos || at < scheme_end ? scheme_end + 3 : at + 1;
    if (entry.find(',', host) != std::string_view::npos) {
      return bad_entry(entry, "a comma that no address follows (an entry after it is empty, or has no scheme://)");
    }
    if (entry.find_first_of("()", host) != std::string_view::npos) {
      return bad_entry(entry, "a parenthesis that is no weight (a weight ends the entry: redis://b(2))");
    }
    e.url = std::string(entry);
    e.name = redact_one(entry);
    if (!names.insert(e.name).second) return bad_entry(entry, "named twice");
    const RemoteBackend* row = remote_backend_of(entry);
    if (row == nullptr) return bad_entry(entry, fmt::format("unknown scheme \"{}\"", scheme));
    if (row->place == RemotePlace::bundles) return bad_entry(entry, row->missing);
    if (row->place == RemotePlace::shard) {
      list.shards.push_back(std::move(e));
    } else {
      if (weighted) {
        return bad_entry(entry, fmt::format("a weight is for the shards ({}); a {}:// store is a level of its own",
                                            shard_schemes(), row->scheme));
      }
      list.levels.push_back(std::move(e));
    }
  }
  return list;
}

}  // namespace kjit::cache
