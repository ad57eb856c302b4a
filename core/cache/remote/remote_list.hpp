// kjit::cache::parse_remote_list: how KJIT_REMOTE_CACHE (RuntimeConfig::remote_cache, --remote)
// is spelled: one address, or a comma list of them, each optionally weighted,
//     redis://a,redis://b(2),unix:///run/redis.sock
// An entry is an address, then optionally "(W)" with W a positive number (default 1); blanks
// around entries are ignored. Where an entry goes is its backend's row's (remote_backend.hpp):
// redis://, rediss:// and unix:// entries are the shards of one level: each key lives on one of
// them, chosen by weighted rendezvous hashing (rendezvous.hpp). http://, https:// and s3://
// entries are levels of their own, after the shards, in the order given (`levels`; no weight). A shard's name, which the hashing reads, is its address as written with
// the password replaced by *** (redact_url's form): a changed password moves no key, and two
// entries of one name are refused. A comma or a final "(...)" cannot be part of an address.
// Only the spelling and the scheme are checked here (core/base checks it at start-up; a Failure names the
// entry); each address is read by the backend that opens it. Nothing here throws.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

struct RemoteListEntry {
  std::string url;     // as written, without its weight
  double weight = 1;   // > 0
  std::string name;    // url with its password redacted: what the hashing and every message use
};

struct RemoteList {
  std::vector<RemoteListEntry> shards;  // RemotePlace::shard rows' addresses, in the order given
  std::vector<RemoteListEntry> levels;  // RemotePlace::level rows', each a level after the shards
};

KJIT_TOOLS_API system::Result<RemoteList> parse_remote_list(std::string_view text);

// `url` with its password replaced by ***, in every entry of a list: "redis://:***@a,redis://b".
std::string redact_remote_list(std::string_view text);

}  // namespace kjit::cache
