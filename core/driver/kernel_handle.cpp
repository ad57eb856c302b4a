// kjit::KernelHandle: one kernel of a loaded module: the launch path, the signature check, and
// the driver's attributes and occupancy figures.
#include <kjit/error.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/kernel.hpp>
#include <kjit/parameters.hpp>

#include "core/driver/driver_api.hpp"
#include "core/driver/kernel_state.hpp"
#include "core/trace/nvtx.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kjit {
namespace {

using detail::KernelState;
using driver::check;

// "T = const float*]" out of __PRETTY_FUNCTION__.
std::string declared_type(const char* pretty) {
  std::string_view s = pretty;
  auto p = s.find("T = ");
  if (p == std::string_view::npos) return std::string(s);
  s.remove_prefix(p + 4);
  auto e = s.find_first_of(";]");
  return std::string(s.substr(0, e));
}

[[noreturn]] void throw_launch_error(const KernelState& k, const LaunchConfig& c, CUresult r, const char* call) {
  std::string why;
  unsigned threads = c.block.x * c.block.y * c.block.z;
  int max_threads = 0;
  driver::get().cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k.function);
  if (max_threads > 0 && threads > static_cast<unsigned>(max_threads)) {
    why = fmt::format("; the block has {} threads and this kernel allows at most {} on device {}", threads,
                      max_threads, k.device);
  }
  if (r == CUDA_ERROR_INVALID_VALUE && c.shared_mem > 48 * 1024) {
    int optin = 0;
    CUdevice dev{};
    const auto& api = driver::get();
    api.cuDeviceGet(&dev, k.device);
    api.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    if (c.shared_mem > static_cast<std::size_t>(optin)) {
      why += fmt::format("; {} bytes of dynamic shared memory asked, device {} allows at most {} per block",
                         c.shared_mem, k.device, optin);
    }
  }
  driver::throw_cuda_error(r, call, fmt::format("launching kernel {} of program {} with grid ({},{},{}), block "
                                                 "({},{},{}), {} bytes dynamic shared memory{}", k.name, k.module_name,
                                                 c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
                                                 c.shared_mem, why));
}

// The function of a library kernel in `context` (current on this thread) and its shared memory
// opt-in: found once per context, kept in one of the kernel's slots. No lock: a slot is claimed
// by compare-and-swap; two threads filling one slot store the same function.
struct Target {
  CUfunction function;
  std::atomic<std::size_t>* allowed;
};

Target in_context(KernelState& k, CUcontext context, const driver::DriverApi& api) {
  auto fill = [&](detail::FunctionInContext& slot) {
    CUfunction f = slot.function.load(std::memory_order_acquire);
    if (f == nullptr) {
      check(api.cuKernelGetFunction(&f, k.kernel), "cuKernelGetFunction", "launching kernel {} of program {} in "
            "another context than its module's", k.name, k.module_name);
      slot.function.store(f, std::memory_order_release);
    }
    return Target{f, &slot.dynamic_shared_allowed};
  };
  for (auto& slot : k.others) {
    CUcontext seen = slot.context.load(std::memory_order_acquire);
    if (seen == nullptr && slot.context.compare_exchange_strong(seen, context)) return fill(slot);
    if (seen == context) return fill(slot);
  }
  static thread_local std::atomic<std::size_t> unlisted_allowed{0};  // more contexts than slots
  CUfunction f = nullptr;
  check(api.cuKernelGetFunction(&f, k.kernel), "cuKernelGetFunction", "launching kernel {} of program {}", k.name,
        k.module_name);
  unlisted_allowed.store(48 * 1024, std::memory_order_relaxed);
  return Target{f, &unlisted_allowed};
}

// The default stream by any of its names: 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD.
bool is_default_stream(CUstream s) {
  return reinterpret_cast<std::uintptr_t>(s) <= reinterpret_cast<std::uintptr_t>(CU_STREAM_PER_THREAD);
}

// The device of a context, asked of the driver with that context current for the question.
int device_of_context(CUcontext context, const driver::DriverApi& api) {
  driver::ContextGuard on(context, api, driver::Restore::always);
  CUdevice dev{};
  check(api.cuCtxGetDevice(&dev), "cuCtxGetDevice", "reading the device of a launch's stream");
  return static_cast<int>(dev);
}

// A stream of another device than the launch's arguments: refused, naming both.
void check_stream_device(const KernelState& k, CUcontext of_stream, int device, const driver::DriverApi& api) {
  const int stream_device = device_of_context(of_stream, api);
  if (stream_device == device) return;  // a context of the same device other than the primary one
  throw ArgumentError(fmt::format("launching kernel {} of program {}: the stream is on cuda:{} and the arguments "
                                  "are on cuda:{}; pass a stream of cuda:{} (or none: its current one)",
                                  k.name, k.module_name, stream_device, device, device));
}

// Where a launch runs: its stream's context; on the default stream the context of
// LaunchConfig::device, else the module's (the device it was loaded for). kjit remembers none of it: the
// current context is read from the driver on every launch (a thread-local read in libcuda), so a
// caller that changed the device since (torch.cuda.device, cudaSetDevice) is never overruled. The
// caller's context (or none) is current again when the launch returns.
void launch(KernelState& k, const LaunchConfig& c, void** args) {
  trace::nvtx::Range range(static_cast<nvtxStringHandle_t>(k.nvtx_name));
  const driver::DriverApi& api = *driver::loaded_driver();  // loaded: the kernel exists
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  CUcontext want;
  if (!is_default_stream(c.stream) && api.cuStreamGetCtx) {
    want = nullptr;
    check(api.cuStreamGetCtx(c.stream, &want), "cuStreamGetCtx", "launching kernel {} of program {}: reading the "
          "context of its stream", k.name, k.module_name);
    if (c.device >= 0 && want != driver::primary_context(c.device)) [[unlikely]] {
      check_stream_device(k, want, c.device, api);
    }
  } else if (c.device >= 0) {
    want = driver::primary_context(c.device);
  } else {
    want = k.context;  // the module's device: a launch never depends on what happens to be current
  }
  if (k.kernel == nullptr) want = k.context;  // a per-context module runs only in its own
  driver::ContextGuard on(want, current, api, driver::Restore::always);
  CUfunction function = k.function;
  std::atomic<std::size_t>* allowed = &k.dynamic_shared_allowed;
  if (want != k.context) [[unlikely]] {
    const Target t = in_context(k, want, api);
    function = t.function;
    allowed = t.allowed;
  }
  if (c.shared_mem > allowed->load(std::memory_order_relaxed)) [[unlikely]] {
    CUresult r = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(c.shared_mem));
    if (r != CUDA_SUCCESS) throw_launch_error(k, c, r, "cuFuncSetAttribute");
    allowed->store(c.shared_mem, std::memory_order_relaxed);
  }
  CUresult r;
  const char* call = "cuLaunchKernel";
  if (c.cluster.x == 0 && !c.cooperative) [[likely]] {
    r = api.cuLaunchKernel(function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
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
    r = api.cuLaunchKernelEx(&cfg, function, args, nullptr);
  }
  if (r != CUDA_SUCCESS) [[unlikely]] throw_launch_error(k, c, r, call);
}

// Declared pointer types against the element types the kernel's PTX and name give.
void check_elements(const KernelHandle& handle, const KernelState& k, const char* const* type_names, std::size_t count) {
  if (k.result == nullptr || k.result->ptx.empty()) return;  // a linked cubin: no PTX to read types from
  const KernelSignature* signature = nullptr;
  try {
    signature = &handle.signature();
  } catch (const UsageError&) {
    return;  // its PTX does not hold this kernel's entry (a linked image): only the sizes are checked
  }
  const KernelSignature& s = *signature;
  for (std::size_t i = 0; i < count && i < s.size(); ++i) {
    const std::string declared = declared_type(type_names[i]);
    const auto star = declared.rfind('*');
    if (star == std::string::npos) continue;
    const auto given = element_type_of(std::string_view(declared).substr(0, star));
    if (!given || *given == ElementType::any || s.fits(i, *given)) continue;  // a struct, void*: as declared
    const Parameter& p = s.parameters()[i];
    if (lane_type(p.element) == *given) continue;  // float* for a float2*: its lanes
    throw UsageError(fmt::format(
        "making a typed handle to kernel {} of program {}: parameter #{} ({}{}{}) points to {} elements, but the "
        "signature declares {} ({}); declare the kernel's element type, or void* to pass any buffer",
        k.name, k.module_name, i, p.type, p.source_name.empty() ? "" : " ", p.source_name, to_string(p.element),
        declared, to_string(*given)));
  }
}

}  // namespace

void KernelHandle::launch_raw(const LaunchConfig& config, void** args) const { launch(*m_state, config, args); }

void KernelHandle::check_signature(const std::size_t* sizes, std::size_t count, const char* const* type_names) const {
  const KernelState& k = *m_state;
  bool same = count == k.param_sizes.size();
  for (std::size_t i = 0; same && i < count; ++i) same = sizes[i] == k.param_sizes[i];
  if (same) {
    check_elements(*this, k, type_names, count);
    return;
  }
  std::vector<std::string> declared, real;
  for (std::size_t i = 0; i < count; ++i) declared.push_back(fmt::format("{} [{} B]", declared_type(type_names[i]), sizes[i]));
  for (std::size_t s : k.param_sizes) real.push_back(fmt::format("[{} B]", s));
  throw UsageError(fmt::format(
      "making a typed handle to kernel {} of program {}: declared {} parameter{} ({}) but the kernel takes {} "
      "({})", k.name, k.module_name, count, count == 1 ? "" : "s", fmt::join(declared, ", "), k.param_sizes.size(),
      fmt::join(real, ", ")));
}

KernelAttributes KernelHandle::attributes() const {
  const KernelState& k = *m_state;
  const auto& api = driver::get();
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

int KernelHandle::max_active_blocks_per_sm(int block_size, std::size_t dynamic_shared) const {
  const KernelState& k = *m_state;
  const auto& api = driver::get();
  driver::ContextGuard on(k.context, api);
  int n = 0;
  check(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k.function, block_size, dynamic_shared),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        "computing the occupancy of kernel {} at {} threads per block", k.name, block_size);
  return n;
}

int KernelHandle::suggested_block_size(std::size_t dynamic_shared) const {
  const KernelState& k = *m_state;
  const auto& api = driver::get();
  driver::ContextGuard on(k.context, api);
  int min_grid = 0, block = 0;
  check(api.cuOccupancyMaxPotentialBlockSize(&min_grid, &block, k.function, nullptr, dynamic_shared, 0),
        "cuOccupancyMaxPotentialBlockSize", "suggesting a block size for kernel {}", k.name);
  return block;
}

const std::string& KernelHandle::name() const { return m_state->name; }

const KernelSignature& KernelHandle::signature(std::string_view source) const {
  detail::KernelState& k = *m_state;
  std::call_once(k.signature_once, [&] {
    KernelSignature s = KernelSignature::of(*k.result, k.name);
    if (!source.empty()) s.read_declaration(source);
    k.signature.emplace(std::move(s));
  });
  return *k.signature;
}
CUfunc_st* KernelHandle::handle() const { return m_state->function; }

}  // namespace kjit
