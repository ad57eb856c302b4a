// kjit::request::ModuleRegistry: the modules a Runtime has loaded in this process, found by the
// request exactly as given (request hash: the hot path, one shared-lock hash lookup) and by
// compiled result (cache key + device: two spellings of one request, or two loaders asking for
// one kernel file, share one module). Every load through a Runtime (Runtime::load, KernelLoader,
// kernels::Kernels) is one get_or_load here: a miss runs inside it, once per request and once per
// key and device however many threads ask (the others wait for that one's module, or its error).
// Thread-safe. fork(): a child's registry is empty (the parent's modules live in the parent's
// CUDA contexts, which CUDA does not carry into a child; they are left alone there, never
// unloaded), and so are its loads in flight.
#pragma once

#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/module.hpp>

#include "core/system/at_fork.hpp"
#include "core/request/counters.hpp"
#include "core/request/request_hash.hpp"

#include <functional>
#include <future>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace kjit::request {

class ModuleRegistry {
public:
  // How a compiled result becomes a module on a device: `loaded_elsewhere`, when not null, is
  // the same result's module on another device, whose load it shares (Module::on). The default
  // loads through the driver (driver::ModuleAccess); tests give their own.
  using Loader = std::function<Module(CompileResult result, const Device& device, const Module* loaded_elsewhere)>;
  // A load's answer: the module and how this call got it.
  struct Answer {
    Module module;
    Outcome outcome = Outcome::registry;
  };

  explicit ModuleRegistry(Counters& counters, Loader loader = {});

  // The module for this exact request on `device`: the one held (Outcome::registry, counted as a
  // registry hit), else the one `obtain()` (a CompileResult: the compile service's answer) gives,
  // loaded once per key and device (a module of the key on another device shares its load) and
  // remembered under the request and the key (Outcome: the result's). A request another thread
  // is loading is waited for (Outcome::waited, counted as a wait). Throws what `obtain` and the
  // load throw, to every caller waiting for it.
  template <class Obtain>
  Answer get_or_load(const RequestHash& request, const Device& device, Obtain&& obtain) {
    if (auto m = find(request)) return {std::move(*m), Outcome::registry};
    return miss(request, device, std::function<CompileResult()>(std::forward<Obtain>(obtain)));
  }

  // The same for a result compiled elsewhere (no request hash: hot reload, whose requests read
  // files the request hash does not cover): the module of its key on `device`, else loaded.
  Answer get_or_load(CompileResult result, const Device& device);

private:
  using KeyOnDevice = std::pair<std::string, int>;

  std::optional<Module> find(const RequestHash& request) const;
  Answer miss(const RequestHash& request, const Device& device, const std::function<CompileResult()>& obtain);
  // The key's module on the device, loaded by this thread (`*loaded` set) or another; also
  // remembered under `request`, when given.
  Module by_key(CompileResult result, const Device& device, const RequestHash* request, bool* loaded);

  Counters& m_counters;
  Loader m_loader;
  mutable std::shared_mutex m_mutex;
  std::unordered_map<RequestHash, Module, RequestHashHasher> m_by_request;
  std::map<KeyOnDevice, Module> m_by_key;
  // Loads in flight, each waited for by the threads that ask for it meanwhile.
  std::unordered_map<RequestHash, std::shared_future<Module>, RequestHashHasher> m_loading;
  std::map<KeyOnDevice, std::shared_future<Module>> m_loading_key;
  system::AtFork::Registration m_fork;
};

}  // namespace kjit::request
