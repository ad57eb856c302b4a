// kjit::Cache's state, shared by its files: cache_admin.cpp (stats, ls, verify, prune, clear) and
// cache_bundle.cpp (export, import, keygen).
#pragma once

#include <kjit/error.hpp>
#include <kjit/tools/cache.hpp>

#include "core/cache/store.hpp"

#include <fmt/format.h>

namespace kjit {

struct Cache::Impl {
  explicit Impl(cache::StoreConfig config) : store(std::move(config)) {}
  // The store, once its folder passed the trust check (cache/dir_trust); UnavailableError otherwise.
  cache::Store& trusted() {
    if (auto ok = store.trusted(); !ok) {
      throw UnavailableError(fmt::format("the cache folder {} is not in use: {}", store.config().dir, ok.error().message));
    }
    return store;
  }
  cache::Store store;
};

}  // namespace kjit
