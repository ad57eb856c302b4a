// kjit::cache::StoreStats: the persistent stats of a store folder (cache/store_folder.hpp; the file,
// PersistentStats): this process's counters (the folder's Stats) added to them by flush(), only
// what was not added before, their totals read, reset. Thread-safe. After fork() the child's
// flush adds only the counts it made itself (the parent's, counted before the fork, are the
// parent's to flush). Failures are returned, never thrown.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/at_fork.hpp"
#include "core/cache/stats.hpp"
#include "core/cache/store_folder.hpp"
#include "core/system/result.hpp"

#include <chrono>
#include <memory>
#include <mutex>

namespace kjit::cache {

class StoreStats {
public:
  KJIT_TOOLS_API explicit StoreStats(std::shared_ptr<StoreFolder> folder);
  StoreStats(const StoreStats&) = delete;
  StoreStats& operator=(const StoreStats&) = delete;

  // Adds the folder's counters not yet flushed (by this object) to the persistent stats. Cheap
  // enough to call after each compile; a Failure when they cannot be written within `timeout`.
  KJIT_TOOLS_API system::Result<void> flush(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Totals of every process that flushed into this folder.
  KJIT_TOOLS_API StatsSnapshot read() const;
  system::Result<void> reset();

private:
  std::shared_ptr<StoreFolder> m_folder;
  std::mutex m_flush_mutex;
  StatsSnapshot m_flushed;  // what flush() already added, under m_flush_mutex
  // fork(): a child's flush adds only what it counted itself (its parent adds the rest). Made
  // after the folder's: its prepare runs first and takes m_flush_mutex before the folder's lock,
  // the order a flush takes them.
  system::AtFork::Registration m_fork;
};

}  // namespace kjit::cache
