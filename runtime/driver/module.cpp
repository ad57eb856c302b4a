// kjit::Module and the kernel handles it gives out: loading, lookup, signature checks, launch.
#include <kjit/error.hpp>
#include <kjit/module.hpp>

#include "runtime/driver/cubin_info.hpp"
#include "runtime/driver/kernel_state.hpp"
#include "runtime/driver/driver_api.hpp"
#include "runtime/driver/nvtx.hpp"
#include "runtime/driver/ptx_variables.hpp"
#include "runtime/driver/unique_handle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cxxabi.h>

#include <cstdlib>
#include <algorithm>
#include <map>
#include <mutex>

namespace kjit {
namespace {

using driver::check;
using driver::make_current;
using detail::KernelState;

void unload_module(CUmodule m) noexcept {
  if (const auto* api = driver::loaded_driver()) api->cuModuleUnload(m);
}
using ModuleHandle = driver::UniqueHandle<CUmodule, &unload_module>;

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

}  // namespace

namespace detail {

struct ModuleState {
  CompileResult result;
  Device device;
  CUcontext context = nullptr;
  ModuleHandle module;
  bool from_cubin = false;  // the driver loaded result.cubin (not PTX)
  mutable std::mutex mutex;  // guards `kernels` (lookups only; never the launch path)
  mutable std::map<std::string, std::unique_ptr<KernelState>, std::less<>> kernels;

  std::vector<std::string> mangled_names() const {
    const auto& api = driver::get();
    unsigned int count = 0;
    check(api.cuModuleGetFunctionCount(&count, module.get()), "cuModuleGetFunctionCount",
          "listing the kernels of program {}", result.program_name);
    std::vector<CUfunction> fns(count);
    if (count) {
      check(api.cuModuleEnumerateFunctions(fns.data(), count, module.get()), "cuModuleEnumerateFunctions",
            "listing the kernels of program {}", result.program_name);
    }
    std::vector<std::string> names;
    for (CUfunction f : fns) {
      const char* n = nullptr;
      if (api.cuFuncGetName(&n, f) == CUDA_SUCCESS && n) names.emplace_back(n);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

// The kernel `name` of a module, looked up once and kept; the pointer keeps the module loaded.
std::shared_ptr<KernelState> kernel_state(const std::shared_ptr<ModuleState>& owner, std::string_view name) {
  const ModuleState& m = *owner;
  std::lock_guard lock(m.mutex);
  if (auto it = m.kernels.find(name); it != m.kernels.end()) return {owner, it->second.get()};

  const auto& api = driver::get();
  std::string symbol = m.result.lowered_name(name).value_or(std::string(name));
  CUfunction f = nullptr;
  CUresult r = api.cuModuleGetFunction(&f, m.module.get(), symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    std::vector<std::string> shown;
    for (const auto& n : m.mangled_names()) {
      std::string d = demangle(n.c_str());
      shown.push_back(d == n ? n : fmt::format("{} ({})", d, n));
    }
    throw UsageError(fmt::format("looking up kernel \"{}\" in program {}: no such kernel; it has {}{}{}", name,
                                 m.result.program_name, shown.empty() ? "none" : "",
                                 fmt::join(shown, ", "),
                                 symbol.find('<') != std::string::npos
                                     ? " (a template needs Program::instantiate(\"name<args>\"))" : ""));
  }
  check(r, "cuModuleGetFunction", "looking up kernel \"{}\" in program {}", name, m.result.program_name);

  auto state = std::make_unique<KernelState>();
  state->function = f;
  state->context = m.context;
  state->device = m.device.ordinal();
  state->name = std::string(name);
  state->module_name = m.result.program_name;
  if (driver::nvtx::enabled()) {
    state->nvtx_name = driver::nvtx::register_string(fmt::format("launch {} ({})", name, m.result.program_name));
  }
  // The sizes come from the cubin kjit loaded when it can read them there: asking the driver
  // means a failing call past the last parameter, which costs more than the rest of the lookup.
  if (auto sizes = m.from_cubin ? driver::cubin_param_sizes(m.result.cubin, symbol) : std::nullopt) {
    state->param_sizes = std::move(*sizes);
  } else {
    for (std::size_t i = 0;; ++i) {
      std::size_t offset = 0, size = 0;
      if (api.cuFuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
      state->param_sizes.push_back(size);
    }
  }
  // Attributes are read when needed (an error message, attributes()): every query is a driver
  // call on the way to the first launch. Up to 48 KB of dynamic shared memory needs no opt-in.
  state->dynamic_shared_allowed.store(48 * 1024);
  KernelState* raw = state.get();
  m.kernels.emplace(std::string(name), std::move(state));
  return {owner, raw};  // aliasing: keeps the module loaded while a kernel handle lives
}

}  // namespace detail

Module::Module(CompileResult compiled, Device device) {
  const auto& api = driver::get();
  auto state = std::make_shared<detail::ModuleState>();
  state->result = std::move(compiled);
  const CompileResult& result = state->result;
  driver::nvtx::Range range("load", result.program_name);
  state->device = device;
  state->context = device.context();
  make_current(state->context, api);

  int cc = device.compute_capability();
  bool use_cubin = result.has_cubin() && result.arch.is_real() && result.arch.number() == cc;
  const std::string& image = use_cubin ? result.cubin : result.ptx;
  if (image.empty()) {
    throw UsageError(fmt::format("loading program {} on CUDA device {} (sm_{}): the result has no cubin for this arch "
                                 "({}) and no PTX", result.program_name, device.ordinal(), cc, result.arch.str()));
  }
  CUmodule m = nullptr;
  CUresult r = api.cuModuleLoadDataEx(&m, image.data(), 0, nullptr, nullptr);
  if (r != CUDA_SUCCESS) {
    driver::throw_cuda_error(r, "cuModuleLoadDataEx",
                              fmt::format("loading {} for program {} (key {}, {}) on CUDA device {} (sm_{})",
                                          use_cubin ? "cubin" : "PTX (driver JIT)", result.program_name,
                                          result.key.empty() ? "none" : result.key, result.arch.str(),
                                          device.ordinal(), cc));
  }
  state->module = ModuleHandle(m);
  state->from_cubin = use_cubin;
  m_state = std::move(state);
}

std::vector<std::string> Module::kernel_names() const {
  std::vector<std::string> out;
  for (const auto& n : m_state->mangled_names()) out.push_back(demangle(n.c_str()));
  return out;
}

bool Module::has_kernel(std::string_view name) const {
  std::string symbol = m_state->result.lowered_name(name).value_or(std::string(name));
  CUfunction f = nullptr;
  return driver::get().cuModuleGetFunction(&f, m_state->module.get(), symbol.c_str()) == CUDA_SUCCESS;
}

std::vector<std::string> Module::global_names() const {
  std::vector<std::string> out;
  for (const auto& n : driver::ptx_variables(m_state->result.ptx)) out.push_back(demangle(n.c_str()));
  return out;
}

GlobalHandle Module::global_handle(std::string_view name, std::size_t element_size, bool array) const {
  const detail::ModuleState& m = *m_state;
  const CompileResult& result = m.result;
  std::optional<std::string> lowered = result.lowered_name(name);
  if (!lowered) lowered = result.lowered_name("&" + std::string(name));
  const std::string symbol = lowered.value_or(std::string(name));
  const auto& api = driver::get();
  make_current(m.context, api);
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  CUresult r = api.cuModuleGetGlobal(&address, &bytes, m.module.get(), symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    std::vector<std::string> shown;
    for (const auto& n : driver::ptx_variables(result.ptx)) {
      std::string d = demangle(n.c_str());
      shown.push_back(d == n ? n : fmt::format("{} ({})", d, n));
    }
    throw UsageError(fmt::format("looking up global \"{}\" in program {}: no such __device__ or __constant__ "
                                 "variable; it has {}{}{}", name, result.program_name, shown.empty() ? "none" : "",
                                 fmt::join(shown, ", "),
                                 symbol.find('<') != std::string::npos
                                     ? " (a variable template needs Program::instantiate(\"&name<args>\"))" : ""));
  }
  check(r, "cuModuleGetGlobal", "looking up global \"{}\" in program {}", name, result.program_name);
  if (element_size != 0 && (array ? bytes % element_size != 0 || bytes == 0 : bytes != element_size)) {
    throw UsageError(fmt::format("making a typed handle to global {} of program {}: the variable has {} bytes, the "
                                 "declared type {} {} bytes{}", name, result.program_name, bytes,
                                 array ? "is an array of elements of" : "has", element_size,
                                 array ? " (the size is no multiple of it)" : ""));
  }
  return GlobalHandle(m_state, std::string(name), address, bytes, m.device);
}

KernelHandle Module::kernel_handle(std::string_view name) const { return KernelHandle(detail::kernel_state(m_state, name)); }

KernelAttributes Module::attributes(std::string_view name) const { return kernel_handle(name).attributes(); }

Device Module::device() const { return m_state->device; }
const CompileResult& Module::compile_result() const { return m_state->result; }

}  // namespace kjit
