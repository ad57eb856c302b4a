// kjit::request::ModuleRegistry: the modules a Runtime has loaded in this process, found by the
// request exactly as given (request hash: the hot path, one shared-lock hash lookup) and by
// compiled result (cache key + device: two spellings of one request, or two loaders asking for
// one kernel file, share one module). Every load through a Runtime (Runtime::load, KernelLoader,
// kernels::Kernels) goes through its one registry. Thread-safe; never throws past allocation.
// fork(): a child's registry is empty (the parent's modules live in the parent's CUDA contexts,
// which CUDA does not carry into a child; they are left alone there, never unloaded).
#pragma once

#include <kjit/module.hpp>

#include "core/system/at_fork.hpp"
#include "core/request/counters.hpp"
#include "core/request/request_hash.hpp"

#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace kjit::request {

class ModuleRegistry {
public:
  explicit ModuleRegistry(Counters& counters);

  // The module loaded for this exact request, counted as a registry hit.
  std::optional<Module> find(const RequestHash& request) const;
  // The module of a compiled result (key) on a device, loading it with `load` when there is
  // none yet; also remembered under `request`.
  template <class Load>
  Module find_or_load(const RequestHash& request, const std::string& key, int device, Load&& load) {
    if (auto m = find_by_key(key, device)) return remember(&request, key, device, std::move(*m));
    return remember(&request, key, device, load());
  }

  // The same for a result compiled elsewhere (no request hash: hot reload, whose requests read
  // files the request hash does not cover).
  template <class Load>
  Module find_or_load(const std::string& key, int device, Load&& load) {
    if (auto m = find_by_key(key, device)) {
      ++m_counters.registry_hits;
      return std::move(*m);
    }
    return remember(nullptr, key, device, load());
  }

  // A module of the compiled result (key) on any device: Module::on(device) shares its load.
  std::optional<Module> find_on_any_device(const std::string& key) const;

private:
  std::optional<Module> find_by_key(const std::string& key, int device) const;
  // Records `module` under its key (and `request`, when given); when another thread recorded one
  // for the key first, that one wins and is returned.
  Module remember(const RequestHash* request, const std::string& key, int device, Module module);

  Counters& m_counters;
  mutable std::shared_mutex m_mutex;
  std::unordered_map<RequestHash, Module, RequestHashHasher> m_by_request;
  std::map<std::pair<std::string, int>, Module> m_by_key;
  system::AtFork::Registration m_fork;
};

}  // namespace kjit::request
