// kjit::request::EntryStore: entries of kjit's own beside compile results (a tuner's
// decisions), kept in the same tiers: the disk, then the fleet's remote. The compile service
// implements it; the tuner sees this and nothing else of the request path.
#pragma once

#include "core/cache/key.hpp"

#include <optional>
#include <string>

namespace kjit::request {

class EntryStore {
public:
  virtual ~EntryStore() = default;
  // The disk's checked entry under `key`, else the remote's (then written to the disk), else
  // nullopt. The Runtime's request counters do not move; the store's and the remote's own
  // lookup counters do (they count every entry read, whatever it holds).
  virtual std::optional<std::string> find_entry(const cache::Key& key) = 0;
  // Writes an entry to the disk, then queues it for the remote (when one may be written).
  virtual void store_entry(const cache::Key& key, const std::string& bytes) = 0;
};

}  // namespace kjit::request
