// kjit::cache::RemoteBackend: the registry of remote backends, one row a scheme, as ccache lists
// its storage backends. A row says how the scheme's addresses are spelled, where such an address
// goes in KJIT_REMOTE_CACHE (a shard of the first level, or a level of its own), what the backend
// can do (locks, expiry, range reads, compare-and-set, whole bundles) and how to open one; the
// tier, the address list, `kjit cache remote ping` and remote bundles ask the row, never the
// URL's spelling. Adding a backend is one file (its RemoteStore and its opener) and one row in
// remote_backend.cpp; docs/remote-cache.md lists the rows, and a test reads them against it
// (test_cache_remote_backend.cpp). Nothing here throws; nothing here is CUDA.
#pragma once

#include "core/system/result.hpp"
#include "core/system/tools_api.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kjit::cache {

class RemoteStore;
struct RemoteOpenOptions;

// What one backend can do, as the tier relies on it.
struct RemoteCapabilities {
  // Atomic expiring named locks (Redis: SET NX PX): the fleet lock that makes the nodes missing a
  // key together compile it once lives on a level that has them.
  bool locks = false;
  // Values expire after KJIT_REMOTE_TTL (elsewhere the server's own means keep its size).
  bool ttl = false;
  // A value's first bytes without the rest (how an unsigned writer looks for a signed value).
  bool range_reads = false;
  // How put_unless_prefixed keeps a signed value from an unsigned writer: in one atomic step on
  // the server, or a read of the value's start followed by the write (another writer between the
  // two wins).
  enum class CompareAndSet { atomic, check_then_write } compare_and_set = CompareAndSet::check_then_write;
  // Keeps a warm bundle (up to gigabytes) as one value: `kjit cache bundle push URL`.
  bool bundles = false;
};

// Where an address of the scheme goes in KJIT_REMOTE_CACHE.
enum class RemotePlace {
  shard,    // one of the first level's shards (rendezvous hashing; may carry a weight)
  level,    // a level of its own after the shards, in the order given
  bundles,  // no place there: it keeps warm bundles only (kjit cache bundle push/pull)
};

using RemoteOpener = system::Result<std::unique_ptr<RemoteStore>> (*)(const std::string& url,
                                                                      const RemoteOpenOptions& options);

struct RemoteBackend {
  std::string_view scheme;   // "redis": its addresses start with "redis://"
  std::string_view form;     // how an address is spelled: "redis://[[user]:password@]host[:port][/db]"
  std::string_view server;   // what speaks it: "Redis (hiredis)"
  RemotePlace place = RemotePlace::level;
  RemoteCapabilities can;
  // Counted into the remote_http_* counters too (its server speaks HTTP: http(s)://, s3://).
  bool over_http = false;
  RemoteOpener open = nullptr;  // null: not in this build, for the reason `missing` gives
  std::string_view missing;     // "this kjit was built without the HTTP store (libcurl ...)"
};

// Every row, in the order messages and docs list them.
KJIT_TOOLS_API std::span<const RemoteBackend> remote_backends();
// The row of `url`'s scheme (the text before "://"), or null.
KJIT_TOOLS_API const RemoteBackend* remote_backend_of(std::string_view url);
// "redis://..., unix://..., http[s]://..., s3://...": the form of every row KJIT_REMOTE_CACHE
// takes, for a message that says what an address may look like.
std::string remote_backend_forms();

}  // namespace kjit::cache
