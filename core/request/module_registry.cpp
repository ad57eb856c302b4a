#include "core/request/module_registry.hpp"

#include <limits>
#include <mutex>
#include <new>

namespace kjit::request {

ModuleRegistry::ModuleRegistry(Counters& counters) : m_counters(counters) {
  m_fork = system::AtFork::add({[this] { m_mutex.lock(); }, [this] { m_mutex.unlock(); },
                               [this] {
                                 new (&m_mutex) std::shared_mutex();
                                 // Forgotten, not destroyed: unloading would call the driver here.
                                 (void)new auto(std::move(m_by_request));
                                 (void)new auto(std::move(m_by_key));
                                 m_by_request.clear();
                                 m_by_key.clear();
                               }});
}

std::optional<Module> ModuleRegistry::find(const RequestHash& request) const {
  std::shared_lock lock(m_mutex);
  auto it = m_by_request.find(request);
  if (it == m_by_request.end()) return std::nullopt;
  ++m_counters.registry_hits;
  return it->second;
}

std::optional<Module> ModuleRegistry::find_by_key(const std::string& key, int device) const {
  std::shared_lock lock(m_mutex);
  auto it = m_by_key.find(std::make_pair(key, device));
  if (it == m_by_key.end()) return std::nullopt;
  return it->second;
}

std::optional<Module> ModuleRegistry::find_on_any_device(const std::string& key) const {
  std::shared_lock lock(m_mutex);
  auto it = m_by_key.lower_bound(std::make_pair(key, std::numeric_limits<int>::min()));
  if (it == m_by_key.end() || it->first.first != key) return std::nullopt;
  return it->second;
}

Module ModuleRegistry::remember(const RequestHash* request, const std::string& key, int device, Module module) {
  std::unique_lock lock(m_mutex);
  auto [it, inserted] = m_by_key.emplace(std::make_pair(key, device), std::move(module));
  if (request != nullptr) m_by_request.emplace(*request, it->second);
  return it->second;
}

}  // namespace kjit::request
