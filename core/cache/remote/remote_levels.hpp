// kjit::cache::split_remote_levels: KJIT_REMOTE_CACHE's comma-separated list as the remote tier's
// levels, fastest first: the Redis servers (redis://, unix://) make the first level, and each
// http:// or https:// entry is a level of its own after it, in the order given
// ("redis://cache:6379,http://store/kjit,https://backup/kjit": Redis, then store, then backup).
// A get asks the levels in that order; a hit in a slower one is written back to the faster ones.
// No CUDA here.
#pragma once

#include "core/system/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

struct RemoteLevelUrls {
  std::vector<std::string> redis;  // the first level's servers (one today; shards: weighted rendezvous)
  std::vector<std::string> http;   // one level each, in the order given
};

// A Failure: an empty entry (",," or a trailing comma), naming its position.
system::Result<RemoteLevelUrls> split_remote_levels(std::string_view list);

}  // namespace kjit::cache
