// kjit::Module and the kernel handles it gives out: loading, lookup, signature checks, launch.
#include <kjit/error.hpp>
#include <kjit/module.hpp>
#include <kjit/parameters.hpp>

#include "core/driver/cubin_info.hpp"
#include "core/driver/kernel_state.hpp"
#include "core/driver/driver_api.hpp"
#include "core/trace/nvtx.hpp"
#include "core/driver/ptx_variables.hpp"
#include "core/driver/symbols.hpp"
#include "core/driver/unique_handle.hpp"
#include "core/trace/phase.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cxxabi.h>

#include <cstdlib>
#include <algorithm>
#include <map>
#include <set>
#include <mutex>

namespace kjit {
namespace {

using driver::check;
using detail::KernelState;

void unload_module(CUmodule m) noexcept {
  if (const auto* api = driver::loaded_driver()) api->cuModuleUnload(m);
}
using ModuleHandle = driver::UniqueHandle<CUmodule, &unload_module>;
void unload_library(CUlibrary l) noexcept {
  if (const auto* api = driver::loaded_driver()) api->cuLibraryUnload(l);
}
using LibraryHandle = driver::UniqueHandle<CUlibrary, &unload_library>;

std::string demangle(const std::string& name) { return driver::demangle(name); }

}  // namespace

namespace detail {

// One compiled result loaded once for every device (cuLibraryLoadData): the Modules of all
// devices share it. Without context-independent loading in the driver, `library` is empty and
// each Module loads a module of its own.
struct LoadedCode {
  CompileResult result;
  LibraryHandle library;
  bool from_cubin = false;  // the image is result.cubin (not PTX)
};

struct ModuleState {
  std::shared_ptr<const LoadedCode> code;
  const CompileResult& result;  // code->result
  Device device;
  CUcontext context = nullptr;
  ModuleHandle module;      // per-context loading only
  bool from_cubin = false;  // the driver loaded result.cubin (not PTX)
  mutable std::mutex mutex;  // guards `kernels` (lookups only; never the launch path)
  mutable std::map<std::string, std::unique_ptr<KernelState>, std::less<>> kernels;
  mutable std::set<std::string, std::less<>> present;  // names has_kernel found (guarded by `mutex`)

  explicit ModuleState(std::shared_ptr<const LoadedCode> c) : code(std::move(c)), result(code->result) {}
  CUlibrary library() const { return code->library.get(); }

  std::vector<std::string> mangled_names() const {
    const auto& api = driver::get();
    std::vector<std::string> names;
    unsigned int count = 0;
    if (library()) {
      check(api.cuLibraryGetKernelCount(&count, library()), "cuLibraryGetKernelCount",
            "listing the kernels of program {}", result.program_name);
      std::vector<CUkernel> listed(count);
      if (count) {
        check(api.cuLibraryEnumerateKernels(listed.data(), count, library()), "cuLibraryEnumerateKernels",
              "listing the kernels of program {}", result.program_name);
      }
      for (CUkernel k : listed) {
        const char* n = nullptr;
        if (api.cuKernelGetName(&n, k) == CUDA_SUCCESS && n) names.emplace_back(n);
      }
    } else {
      check(api.cuModuleGetFunctionCount(&count, module.get()), "cuModuleGetFunctionCount",
            "listing the kernels of program {}", result.program_name);
      std::vector<CUfunction> fns(count);
      if (count) {
        check(api.cuModuleEnumerateFunctions(fns.data(), count, module.get()), "cuModuleEnumerateFunctions",
              "listing the kernels of program {}", result.program_name);
      }
      for (CUfunction f : fns) {
        const char* n = nullptr;
        if (api.cuFuncGetName(&n, f) == CUDA_SUCCESS && n) names.emplace_back(n);
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // The symbol of kernel `name`: a name expression's lowered name, the name itself, or (a C++
  // kernel asked for by its plain name, "square" for _Z6squarePfi) the one mangled kernel of
  // that name. Throws UsageError when the plain name is overloaded.
  std::string symbol_of(std::string_view name) const {
    if (auto lowered = result.lowered_name(name)) return *lowered;
    std::string symbol(name);
    if (name.rfind("_Z", 0) == 0 || name.find('(') != std::string_view::npos || kernel_exists(symbol)) return symbol;
    std::vector<std::string> found;
    for (const auto& n : mangled_names()) {
      if (n.rfind("_Z", 0) == 0 && driver::plain_name(driver::demangle(n)) == name) found.push_back(n);
    }
    if (found.size() == 1) return found.front();
    if (found.size() > 1) {
      std::vector<std::string> shown;
      for (const auto& n : found) shown.push_back(driver::demangle(n));
      throw UsageError(fmt::format("looking up kernel \"{}\" in program {}: the name is overloaded ({}); ask for "
                                   "one by its mangled name or a name expression", name, result.program_name,
                                   fmt::join(shown, "; ")));
    }
    return symbol;
  }

  bool kernel_exists(const std::string& symbol) const {
    const auto& api = driver::get();
    if (library()) {
      CUkernel k = nullptr;
      return api.cuLibraryGetKernel(&k, library(), symbol.c_str()) == CUDA_SUCCESS;
    }
    CUfunction f = nullptr;
    return api.cuModuleGetFunction(&f, module.get(), symbol.c_str()) == CUDA_SUCCESS;
  }

  // The kernel `symbol` in this module's context: CUDA_ERROR_NOT_FOUND when there is none.
  CUresult find_function(const driver::DriverApi& api, const std::string& symbol, CUfunction* f, CUkernel* k) const {
    *k = nullptr;
    if (!library()) return api.cuModuleGetFunction(f, module.get(), symbol.c_str());
    if (CUresult r = api.cuLibraryGetKernel(k, library(), symbol.c_str()); r != CUDA_SUCCESS) return r;
    driver::ContextGuard on(context, api);
    return api.cuKernelGetFunction(f, *k);
  }
};

// The kernel `name` of a module, looked up once and kept; the pointer keeps the module loaded.
std::shared_ptr<KernelState> kernel_state(const std::shared_ptr<ModuleState>& owner, std::string_view name) {
  const ModuleState& m = *owner;
  std::lock_guard lock(m.mutex);
  if (auto it = m.kernels.find(name); it != m.kernels.end()) return {owner, it->second.get()};

  const auto& api = driver::get();
  std::string symbol = m.symbol_of(name);
  CUfunction f = nullptr;
  CUkernel kernel = nullptr;
  CUresult r = m.find_function(api, symbol, &f, &kernel);
  if (r == CUDA_ERROR_NOT_FOUND) {
    std::vector<std::string> shown;
    for (const auto& n : m.mangled_names()) {
      std::string d = demangle(n);
      shown.push_back(d == n ? n : fmt::format("{} ({})", d, n));
    }
    throw UsageError(fmt::format("looking up kernel \"{}\" in program {}: no such kernel; it has {}{}{}", name,
                                 m.result.program_name, shown.empty() ? "none" : "",
                                 fmt::join(shown, ", "),
                                 symbol.find('<') != std::string::npos
                                     ? " (a template needs its name expression: instantiate(\"name<args>\") on the Program)" : ""));
  }
  check(r, m.library() ? "cuLibraryGetKernel" : "cuModuleGetFunction", "looking up kernel \"{}\" in program {}",
        name, m.result.program_name);

  auto state = std::make_unique<KernelState>();
  state->function = f;
  state->kernel = kernel;
  state->context = m.context;
  state->device = m.device.ordinal();
  state->name = std::string(name);
  state->module_name = m.result.program_name;
  state->result = &m.result;
  trace::remember_kernel(symbol, name, m.result.program_name, m.result.key, to_string(m.result.outcome));
  if (trace::nvtx::enabled()) {
    state->nvtx_name = trace::nvtx::register_string(fmt::format("launch {} ({})", name, m.result.program_name));
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

namespace {

// Whether `code`, loaded once, serves `device` too: PTX does (the driver compiles it for each
// device), a cubin only on its own arch.
bool serves(const detail::LoadedCode& code, const Device& device) {
  return code.library && (!code.from_cubin || code.result.arch.number() == device.compute_capability());
}

}  // namespace

Module::Module(CompileResult compiled, Device device) {
  const auto& api = driver::get();
  auto code = std::make_shared<detail::LoadedCode>();
  code->result = std::move(compiled);
  const CompileResult& result = code->result;
  trace::nvtx::Range range("load", result.program_name);
  trace::PhaseScope phase;
  CUcontext context = device.context();
  driver::ContextGuard on(context, api);  // the caller's context back when the load returns

  int cc = device.compute_capability();
  bool use_cubin = result.has_cubin() && result.arch.is_real() && result.arch.number() == cc;
  const std::string& image = use_cubin ? result.cubin : result.ptx;
  if (image.empty()) {
    throw UsageError(fmt::format("loading program {} on CUDA device {} (sm_{}): the result has no cubin for this arch "
                                 "({}) and no PTX", result.program_name, device.ordinal(), cc, result.arch.str()));
  }
  code->from_cubin = use_cubin;
  auto fail = [&](CUresult r, const char* call) {
    driver::throw_cuda_error(r, call, fmt::format("loading {} for program {} (key {}, {}) on CUDA device {} (sm_{})",
                                                  use_cubin ? "cubin" : "PTX (driver JIT)", result.program_name,
                                                  result.key.empty() ? "none" : result.key, result.arch.str(),
                                                  device.ordinal(), cc));
  };
  CUmodule m = nullptr;
  if (api.has_libraries()) {
    // Context-independent: one load for every device; each context gets the code on first use.
    CUlibrary lib = nullptr;
    if (CUresult r = api.cuLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
        r != CUDA_SUCCESS) {
      fail(r, "cuLibraryLoadData");
    }
    code->library = LibraryHandle(lib);
  } else if (CUresult r = api.cuModuleLoadDataEx(&m, image.data(), 0, nullptr, nullptr); r != CUDA_SUCCESS) {
    fail(r, "cuModuleLoadDataEx");
  }
  auto state = std::make_shared<detail::ModuleState>(std::move(code));
  state->device = device;
  state->context = context;
  state->module = ModuleHandle(m);
  state->from_cubin = use_cubin;
  m_state = std::move(state);
  phase.end(trace::Phase::load, result.program_name, result.key);
  m_outcome = m_state->result.outcome;
}

Module Module::on(Device device) const {
  if (device.ordinal() == m_state->device.ordinal()) return *this;
  if (!serves(*m_state->code, device)) return Module(m_state->result, device);  // a load of its own
  auto state = std::make_shared<detail::ModuleState>(m_state->code);
  state->device = device;
  state->context = device.context();
  state->from_cubin = m_state->from_cubin;
  Module out;
  out.m_state = std::move(state);
  return out;
}

bool Module::shares_code_with(const Module& other) const {
  return m_state && other.m_state && m_state->code == other.m_state->code;
}

std::vector<std::string> Module::kernel_names() const {
  std::vector<std::string> out;
  for (const auto& n : m_state->mangled_names()) out.push_back(demangle(n));
  return out;
}

bool Module::has_kernel(std::string_view name) const {
  const detail::ModuleState& m = *m_state;
  {  // asked before under this name (load_inline's functions, again): no driver call, no demangling
    std::lock_guard lock(m.mutex);
    if (m.present.find(name) != m.present.end() || m.kernels.find(name) != m.kernels.end()) return true;
  }
  bool found = true;  // overloaded: there are several
  try {
    found = m.kernel_exists(m.symbol_of(name));
  } catch (const UsageError&) {
  }
  if (found) {
    std::lock_guard lock(m.mutex);
    m.present.emplace(name);
  }
  return found;
}

KernelSignature Module::signature(std::string_view name) const { return KernelSignature::of(m_state->result, name); }

std::vector<std::string> Module::global_names() const {
  std::vector<std::string> out;
  for (const auto& n : driver::ptx_variables(m_state->result.ptx)) out.push_back(demangle(n));
  return out;
}

GlobalHandle Module::global_handle(std::string_view name, std::size_t element_size, bool array) const {
  const detail::ModuleState& m = *m_state;
  const CompileResult& result = m.result;
  std::optional<std::string> lowered = result.lowered_name(name);
  if (!lowered) lowered = result.lowered_name("&" + std::string(name));
  const std::string symbol = lowered.value_or(std::string(name));
  const auto& api = driver::get();
  driver::ContextGuard on(m.context, api);
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  // A library's variable has an address on each device: the one of this module's (current) context.
  CUresult r = m.library() ? api.cuLibraryGetGlobal(&address, &bytes, m.library(), symbol.c_str())
                           : api.cuModuleGetGlobal(&address, &bytes, m.module.get(), symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    std::vector<std::string> shown;
    for (const auto& n : driver::ptx_variables(result.ptx)) {
      std::string d = demangle(n);
      shown.push_back(d == n ? n : fmt::format("{} ({})", d, n));
    }
    throw UsageError(fmt::format("looking up global \"{}\" in program {}: no such __device__ or __constant__ "
                                 "variable; it has {}{}{}", name, result.program_name, shown.empty() ? "none" : "",
                                 fmt::join(shown, ", "),
                                 symbol.find('<') != std::string::npos
                                     ? " (a variable template needs its name expression: instantiate(\"&name<args>\") on the Program)" : ""));
  }
  check(r, m.library() ? "cuLibraryGetGlobal" : "cuModuleGetGlobal", "looking up global \"{}\" in program {}", name, result.program_name);
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
