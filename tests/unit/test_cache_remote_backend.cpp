// kjit::cache::RemoteBackend: the registry's rows are the table of docs/remote-cache.md, each
// row finds its scheme's addresses and places them in KJIT_REMOTE_CACHE as it says, and a row
// this build lacks refuses its addresses saying why.
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_list.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace kjit::cache;

namespace {

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// The row as the docs write it: scheme -> the cells after it.
std::vector<std::string> cells_of(const RemoteBackend& row) {
  return {"`" + std::string(row.form) + "`",
          row.place == RemotePlace::shard ? "shard" : row.place == RemotePlace::level ? "level" : "bundles",
          yes_no(row.can.locks),
          yes_no(row.can.ttl),
          yes_no(row.can.range_reads),
          row.can.compare_and_set == RemoteCapabilities::CompareAndSet::atomic ? "atomic" : "check then write",
          yes_no(row.can.bundles)};
}

// The table between "<!-- backends: ... -->" and "<!-- /backends -->": scheme -> its cells.
std::map<std::string, std::vector<std::string>> documented_rows() {
  const std::string text =
      kjit::test::read_file(std::filesystem::path(KJIT_SOURCE_DIR) / "docs/remote-cache.md");
  const auto start = text.find("<!-- backends:");
  const auto end = text.find("<!-- /backends -->");
  REQUIRE(start != std::string::npos);
  REQUIRE(end != std::string::npos);
  std::map<std::string, std::vector<std::string>> rows;
  std::size_t pos = text.find('\n', start) + 1;
  while (pos < end) {
    std::size_t eol = text.find('\n', pos);
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.starts_with("| `")) continue;  // the header and its rule
    std::vector<std::string> cells;
    for (std::size_t a = 1; a < line.size();) {
      const std::size_t b = line.find(" |", a);
      if (b == std::string::npos) break;
      std::string cell = line.substr(a, b - a);
      while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
      cells.push_back(cell);
      a = b + 2;
    }
    REQUIRE_MESSAGE(cells.size() == 8, line);
    const std::string scheme = cells[0].substr(1, cells[0].size() - 2);
    cells.erase(cells.begin());
    rows[scheme] = cells;
  }
  return rows;
}

}  // namespace

TEST_SUITE("RemoteBackend") {
  TEST_CASE("docs/remote-cache.md lists exactly the registry's rows with their capabilities") {
    auto documented = documented_rows();
    for (const RemoteBackend& row : remote_backends()) {
      const std::string scheme(row.scheme);
      CAPTURE(scheme);
      auto it = documented.find(scheme);
      REQUIRE_MESSAGE(it != documented.end(), scheme << " is not in docs/remote-cache.md's table");
      CHECK(it->second == cells_of(row));
      documented.erase(it);
    }
    for (const auto& [scheme, cells] : documented) FAIL_CHECK(scheme << " is in the docs and not in the registry");
  }

  TEST_CASE("each row finds its own addresses and the list places them as the row says") {
    for (const RemoteBackend& row : remote_backends()) {
      CAPTURE(row.scheme);
      CHECK(row.form.starts_with(std::string(row.scheme) + "://"));
      CHECK(remote_backend_of(row.form) == &row);
      const std::string address = std::string(row.scheme) + (row.scheme == "unix" ? ":///run/r.sock" : "://host-a/x");
      if (row.place == RemotePlace::bundles) {  // no place in KJIT_REMOTE_CACHE: refused saying why
        CHECK(remote_backend_forms().find(row.form) == std::string::npos);
        auto refused = parse_remote_list("redis://first," + address);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().message.find(row.missing) != std::string::npos);
        continue;
      }
      CHECK(remote_backend_forms().find(row.form) != std::string::npos);
      auto list = parse_remote_list("redis://first," + address);
      REQUIRE_MESSAGE(list, (list ? "" : list.error().message));
      CHECK((row.place == RemotePlace::shard ? list->shards.size() : list->levels.size()) ==
            (row.place == RemotePlace::shard ? 2u : 1u));
      auto weighted = parse_remote_list(address + "(2)");
      CHECK(static_cast<bool>(weighted) == (row.place == RemotePlace::shard));
      // A row with an opener opens (lazily: nothing is contacted); one without says why.
      if (row.open == nullptr) {
        auto r = open_remote_store(address, {});
        REQUIRE_FALSE(r);
        CHECK_MESSAGE(r.error().message.find(row.missing) != std::string::npos, r.error().message);
      }
    }
    CHECK(remote_backend_of("ftp://x") == nullptr);
    CHECK(remote_backend_of("redis:/x") == nullptr);
    auto unknown = open_remote_store("ftp://x", {});
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().message.find("unknown scheme") != std::string::npos);
    CHECK(unknown.error().message.find("s3://bucket") != std::string::npos);
  }

  TEST_CASE("only the shard schemes carry weights and the Redis rows alone have locks") {
    for (const RemoteBackend& row : remote_backends()) {
      CAPTURE(row.scheme);
      CHECK(row.can.locks == (row.place == RemotePlace::shard));
      CHECK(row.over_http == (row.scheme == "http" || row.scheme == "https" || row.scheme == "s3"));
    }
    auto r = parse_remote_list("s3://bucket/p(2)");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("a weight is for the shards (redis://, rediss://, unix://); a s3:// store") !=
          std::string::npos);
  }
}
