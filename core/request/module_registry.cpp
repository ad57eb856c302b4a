#include "core/request/module_registry.hpp"

#include "core/driver/module_access.hpp"

#include <limits>
#include <mutex>
#include <new>

namespace kjit::request {

namespace {

Module load_through_driver(CompileResult result, const Device& device, const Module* loaded_elsewhere) {
  if (loaded_elsewhere != nullptr) return loaded_elsewhere->on(device);
  return driver::ModuleAccess::load(std::move(result), device);
}

}  // namespace

ModuleRegistry::ModuleRegistry(Counters& counters, Loader loader)
    : m_counters(counters), m_loader(loader ? std::move(loader) : Loader(load_through_driver)) {
  m_fork = system::AtFork::add({[this] { m_mutex.lock(); }, [this] { m_mutex.unlock(); },
                               [this] {
                                 new (&m_mutex) std::shared_mutex();
                                 // Forgotten, not destroyed: unloading would call the driver here,
                                 // and the loads in flight are the parent's threads'.
                                 (void)new auto(std::move(m_by_request));
                                 (void)new auto(std::move(m_by_key));
                                 (void)new auto(std::move(m_loading));
                                 (void)new auto(std::move(m_loading_key));
                                 m_by_request.clear();
                                 m_by_key.clear();
                                 m_loading.clear();
                                 m_loading_key.clear();
                               }});
}

std::optional<Module> ModuleRegistry::find(const RequestHash& request) const {
  std::shared_lock lock(m_mutex);
  auto it = m_by_request.find(request);
  if (it == m_by_request.end()) return std::nullopt;
  ++m_counters.registry_hits;
  return it->second;
}

ModuleRegistry::Answer ModuleRegistry::miss(const RequestHash& request, const Device& device,
                                            const std::function<CompileResult()>& obtain) {
  std::promise<Module> promise;
  std::shared_future<Module> other;
  {
    std::unique_lock lock(m_mutex);
    if (auto it = m_by_request.find(request); it != m_by_request.end()) {  // loaded since find()
      ++m_counters.registry_hits;
      return {it->second, Outcome::registry};
    }
    if (auto it = m_loading.find(request); it != m_loading.end()) {
      other = it->second;
    } else {
      m_loading.emplace(request, promise.get_future().share());
    }
  }
  if (other.valid()) {
    ++m_counters.cache.waits;
    return {other.get(), Outcome::waited};  // rethrows that load's error
  }
  try {
    CompileResult result = obtain();
    const Outcome outcome = result.outcome;  // this request's answer, whichever thread loads the key
    bool loaded = false;
    Module m = by_key(std::move(result), device, &request, &loaded);  // remembered under the request
    promise.set_value(m);
    std::unique_lock lock(m_mutex);
    m_loading.erase(request);
    return {std::move(m), outcome};
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::unique_lock lock(m_mutex);
    m_loading.erase(request);
    throw;
  }
}

ModuleRegistry::Answer ModuleRegistry::get_or_load(CompileResult result, const Device& device) {
  const Outcome outcome = result.outcome;
  bool loaded = false;
  Module m = by_key(std::move(result), device, nullptr, &loaded);
  if (!loaded) ++m_counters.registry_hits;
  return {std::move(m), loaded ? outcome : Outcome::registry};
}

Module ModuleRegistry::by_key(CompileResult result, const Device& device, const RequestHash* request, bool* loaded) {
  const KeyOnDevice key{result.key, device.ordinal()};
  std::promise<Module> promise;
  std::shared_future<Module> other;
  std::optional<Module> elsewhere;
  {
    std::unique_lock lock(m_mutex);
    if (auto it = m_by_key.find(key); it != m_by_key.end()) {
      if (request != nullptr) m_by_request.emplace(*request, it->second);
      return it->second;
    }
    if (auto it = m_loading_key.find(key); it != m_loading_key.end()) {
      other = it->second;
    } else {
      m_loading_key.emplace(key, promise.get_future().share());
      // One load for every device: a module of the key on another device shares its load.
      auto it2 = m_by_key.lower_bound(KeyOnDevice{key.first, std::numeric_limits<int>::min()});
      if (it2 != m_by_key.end() && it2->first.first == key.first) elsewhere = it2->second;
    }
  }
  if (other.valid()) {
    Module m = other.get();
    if (request != nullptr) {
      std::unique_lock lock(m_mutex);
      m_by_request.emplace(*request, m);
    }
    return m;
  }
  try {
    Module m = m_loader(std::move(result), device, elsewhere ? &*elsewhere : nullptr);
    {
      std::unique_lock lock(m_mutex);
      m_by_key.emplace(key, m);
      if (request != nullptr) m_by_request.emplace(*request, m);
      m_loading_key.erase(key);
    }
    promise.set_value(m);
    *loaded = true;
    return m;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::unique_lock lock(m_mutex);
    m_loading_key.erase(key);
    throw;
  }
}

}  // namespace kjit::request
