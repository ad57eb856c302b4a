// kjit::cache::rendezvous_shard: which shard of a remote level holds a key, by weighted
// rendezvous hashing, ccache's scheme for its remote storage shards, so that an operator can
// reason about it (docs/fleet.md):
//     h     = XXH3-64 of the key's 32 lowercase hex digits followed by the shard's name
//     u     = (h mod 2^53) / 2^53                       (in [0, 1))
//     score = weight / -ln(u)                            (0 when u is 0)
// and the key goes to the shard of the highest score (the first listed on a tie). The choice
// depends on the key and the list alone, never on which shards answer: a down shard's keys are
// misses, never moved. Adding a shard of weight w to shards of total weight W moves about
// w / (W + w) of the keys, all of them to the new shard; removing one moves only its own.
// `kjit warm --shard I/N` splits its items with the same function (tools/warm/shard, names "0" ..
// "N-1"). Pure: nothing here throws or allocates for names under 200 bytes.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/cache/key.hpp"

#include <cstddef>
#include <span>
#include <string_view>

namespace kjit::cache {

struct RendezvousShard {
  std::string_view name;  // RemoteListEntry::name
  double weight = 1;
};

// The key's score on one shard (for tests and docs: rendezvous_shard picks the highest).
double rendezvous_score(const Key& key, std::string_view name, double weight) noexcept;
// The index of the key's shard; 0 for an empty or one-shard list.
KJIT_TOOLS_API std::size_t rendezvous_shard(const Key& key, std::span<const RendezvousShard> shards) noexcept;

}  // namespace kjit::cache
