// kjit::Module and the kernel handles it gives out: loading, lookup, signature checks, launch.
#include <kjit/error.hpp>
#include <kjit/module.hpp>

#include "runtime/cubin_info.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/unique_handle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace kjit {
namespace {

using runtime::check;
using runtime::driver;

void unload_module(CUmodule m) noexcept {
  if (const auto* api = runtime::loaded_driver()) api->cuModuleUnload(m);
}
using ModuleHandle = runtime::UniqueHandle<CUmodule, &unload_module>;

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

[[gnu::hot]] void make_current(CUcontext ctx, const runtime::DriverApi& api) {
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  if (current != ctx) check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", "making a kernel's context current");
  runtime::t_current_context = ctx;
}

// "T = const float*]" out of __PRETTY_FUNCTION__.
std::string declared_type(const char* pretty) {
  std::string_view s = pretty;
  auto p = s.find("T = ");
  if (p == std::string_view::npos) return std::string(s);
  s.remove_prefix(p + 4);
  auto e = s.find_first_of(";]");
  return std::string(s.substr(0, e));
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
    const auto& api = driver();
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

[[gnu::hot]] std::shared_ptr<KernelState> kernel_state(const std::shared_ptr<ModuleState>& owner, std::string_view name) {
  const ModuleState& m = *owner;
  std::lock_guard lock(m.mutex);
  if (auto it = m.kernels.find(name); it != m.kernels.end()) return {owner, it->second.get()};

  const auto& api = driver();
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
  if (runtime::nvtx::enabled()) {
    state->nvtx_name = runtime::nvtx::register_string(fmt::format("launch {} ({})", name, m.result.program_name));
  }
  // The sizes come from the cubin kjit loaded when it can read them there: asking the driver
  // means a failing call past the last parameter, which costs more than the rest of the lookup.
  if (auto sizes = m.from_cubin ? runtime::cubin_param_sizes(m.result.cubin, symbol) : std::nullopt) {
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

[[gnu::hot]] std::shared_ptr<KernelState> kernel_state(const std::shared_ptr<ModuleState>& owner, std::string_view name,
                                          const std::size_t* sizes, std::size_t count,
                                          const char* const* type_names) {
  auto state = kernel_state(owner, name);
  check_signature(*state, sizes, count, type_names);
  return state;
}

[[gnu::hot]] void check_signature(const KernelState& k, const std::size_t* sizes, std::size_t count,
                     const char* const* type_names) {
  bool same = count == k.param_sizes.size();
  for (std::size_t i = 0; same && i < count; ++i) same = sizes[i] == k.param_sizes[i];
  if (same) return;
  std::vector<std::string> declared, real;
  for (std::size_t i = 0; i < count; ++i) declared.push_back(fmt::format("{} [{} B]", declared_type(type_names[i]), sizes[i]));
  for (std::size_t s : k.param_sizes) real.push_back(fmt::format("[{} B]", s));
  throw UsageError(fmt::format(
      "making a typed handle to kernel {} of program {}: declared {} parameter{} ({}) but the kernel takes {} "
      "({})", k.name, k.module_name, count, count == 1 ? "" : "s", fmt::join(declared, ", "), k.param_sizes.size(),
      fmt::join(real, ", ")));
}

[[noreturn]] static void throw_launch_error(const KernelState& k, const LaunchConfig& c, CUresult r, const char* call) {
  std::string why;
  unsigned threads = c.block.x * c.block.y * c.block.z;
  int max_threads = 0;
  driver().cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k.function);
  if (max_threads > 0 && threads > static_cast<unsigned>(max_threads)) {
    why = fmt::format("; the block has {} threads and this kernel allows at most {} on device {}", threads,
                      max_threads, k.device);
  }
  if (r == CUDA_ERROR_INVALID_VALUE && c.shared_mem > 48 * 1024) {
    int optin = 0;
    CUdevice dev{};
    const auto& api = driver();
    api.cuDeviceGet(&dev, k.device);
    api.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    if (c.shared_mem > static_cast<std::size_t>(optin)) {
      why += fmt::format("; {} bytes of dynamic shared memory asked, device {} allows at most {} per block",
                         c.shared_mem, k.device, optin);
    }
  }
  runtime::throw_cuda_error(r, call, fmt::format("launching kernel {} of program {} with grid ({},{},{}), block "
                                                 "({},{},{}), {} bytes dynamic shared memory{}", k.name, k.module_name,
                                                 c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
                                                 c.shared_mem, why));
}

using runtime::t_current_context;

// A launch trusts t_current_context and asks the driver only when it differs from the kernel's
// context, or when a launch fails (someone may have changed the current context behind kjit's
// back): then it checks, switches and retries once.
static void ensure_context(CUcontext ctx, const runtime::DriverApi& api) {
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  if (current != ctx) check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", "making a kernel's context current");
  t_current_context = ctx;
}

void launch(KernelState& k, const LaunchConfig& c, void** args) {
  runtime::nvtx::Range range(static_cast<nvtxStringHandle_t>(k.nvtx_name));
  const runtime::DriverApi& api = *runtime::loaded_driver();  // loaded: the kernel exists
  if (t_current_context != k.context) [[unlikely]] ensure_context(k.context, api);
  if (c.shared_mem > k.dynamic_shared_allowed.load(std::memory_order_relaxed)) [[unlikely]] {
    CUresult r = api.cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(c.shared_mem));
    if (r != CUDA_SUCCESS) throw_launch_error(k, c, r, "cuFuncSetAttribute");
    k.dynamic_shared_allowed.store(c.shared_mem, std::memory_order_relaxed);
  }
  CUresult r;
  const char* call = "cuLaunchKernel";
  if (c.cluster.x == 0 && !c.cooperative) [[likely]] {
    r = api.cuLaunchKernel(k.function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
                           static_cast<unsigned>(c.shared_mem), c.stream, args, nullptr);
  } else {
    CUlaunchAttribute attrs[2];
    unsigned n = 0;
    if (c.cluster.x > 0) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n].value.clusterDim.x = c.cluster.x;
      attrs[n].value.clusterDim.y = c.cluster.y;
      attrs[n].value.clusterDim.z = c.cluster.z;
      ++n;
    }
    if (c.cooperative) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[n].value.cooperative = 1;
      ++n;
    }
    CUlaunchConfig cfg{};
    cfg.gridDimX = c.grid.x; cfg.gridDimY = c.grid.y; cfg.gridDimZ = c.grid.z;
    cfg.blockDimX = c.block.x; cfg.blockDimY = c.block.y; cfg.blockDimZ = c.block.z;
    cfg.sharedMemBytes = static_cast<unsigned>(c.shared_mem);
    cfg.hStream = c.stream;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    call = "cuLaunchKernelEx";
    r = api.cuLaunchKernelEx(&cfg, k.function, args, nullptr);
  }
  if (r != CUDA_SUCCESS) [[unlikely]] {
    CUcontext current = nullptr;
    api.cuCtxGetCurrent(&current);
    if (current != k.context) {  // the context changed behind kjit's back: switch and retry once
      ensure_context(k.context, api);
      launch(k, c, args);
      return;
    }
    throw_launch_error(k, c, r, call);
  }
}

KernelAttributes attributes(const KernelState& k) {
  const auto& api = driver();
  auto get = [&](CUfunction_attribute a) {
    int v = 0;
    check(api.cuFuncGetAttribute(&v, a, k.function), "cuFuncGetAttribute",
          "reading the attributes of kernel {}", k.name);
    return v;
  };
  KernelAttributes out;
  out.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
  out.static_shared_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  out.max_dynamic_shared_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  out.local_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
  out.const_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
  out.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  out.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  out.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  return out;
}

int max_active_blocks_per_sm(const KernelState& k, int block_size, std::size_t dynamic_shared) {
  const auto& api = driver();
  make_current(k.context, api);
  int n = 0;
  check(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k.function, block_size, dynamic_shared),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        "computing the occupancy of kernel {} at {} threads per block", k.name, block_size);
  return n;
}

int suggested_block_size(const KernelState& k, std::size_t dynamic_shared) {
  const auto& api = driver();
  make_current(k.context, api);
  int min_grid = 0, block = 0;
  check(api.cuOccupancyMaxPotentialBlockSize(&min_grid, &block, k.function, nullptr, dynamic_shared, 0),
        "cuOccupancyMaxPotentialBlockSize", "suggesting a block size for kernel {}", k.name);
  return block;
}

}  // namespace detail

[[gnu::hot]] Module::Module(CompileResult compiled, Device device) {
  const auto& api = driver();
  auto state = std::make_shared<detail::ModuleState>();
  state->result = std::move(compiled);
  const CompileResult& result = state->result;
  runtime::nvtx::Range range("load", result.program_name);
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
    runtime::throw_cuda_error(r, "cuModuleLoadDataEx",
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
  return driver().cuModuleGetFunction(&f, m_state->module.get(), symbol.c_str()) == CUDA_SUCCESS;
}

KernelAttributes Module::attributes(std::string_view name) const {
  return detail::attributes(*detail::kernel_state(m_state, name));
}

Device Module::device() const { return m_state->device; }
const CompileResult& Module::compile_result() const { return m_state->result; }

}  // namespace kjit
