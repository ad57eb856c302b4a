// kjit::Cache's state, shared by its files: cache_admin.cpp (stats, ls, verify, prune, clear) and
// cache_bundle.cpp (export, import, keygen).
#pragma once

#include <kjit/error.hpp>
#include <kjit/tools/cache.hpp>

#include "core/spi/cache.hpp"

#include <fmt/format.h>

#include <memory>

namespace kjit {

// One cache folder and the parts of it the administration uses.
struct Cache::Impl {
  explicit Impl(cache::StoreConfig config)
      : folder(std::make_shared<cache::StoreFolder>(std::move(config))), store(folder), maintenance(folder), stats(folder) {}
  // This, once its folder passed the trust check (cache/dir_trust); UnavailableError otherwise.
  Impl& trusted() {
    if (auto ok = folder->trusted(); !ok) {
      throw UnavailableError(fmt::format("the cache folder {} is not in use: {}", folder->config().dir, ok.error().message));
    }
    return *this;
  }
  std::shared_ptr<cache::StoreFolder> folder;
  cache::Store store;                    // the request path: bundles read and write entries through it
  cache::StoreMaintenance maintenance;   // stats' usage, ls, verify, prune, clear
  cache::StoreStats stats;               // the folder's persistent stats
};

}  // namespace kjit
