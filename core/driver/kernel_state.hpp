// kjit::detail::KernelState: one kernel of a loaded module, shared by every KernelHandle to it
// (opaque in the public headers). Made by Module's lookup (module.cpp), read by the launch path
// (kernel_handle.cpp).
#pragma once

#include <kjit/parameters.hpp>

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kjit::detail {

// The kernel as a function of one more context (a library kernel launched on another device or
// context than its module's), found on the first launch there.
struct FunctionInContext {
  std::atomic<CUcontext> context{nullptr};
  std::atomic<CUfunction> function{nullptr};
  std::atomic<std::size_t> dynamic_shared_allowed{48 * 1024};
};

struct KernelState {
  CUfunction function = nullptr;  // in `context`, the module's
  CUcontext context = nullptr;
  CUkernel kernel = nullptr;      // context-independent handle (library loading), else nullptr
  static constexpr int k_other_contexts = 8;  // more are served, asking the driver every launch
  FunctionInContext others[k_other_contexts];
  int device = 0;
  std::string name;
  std::string module_name;
  std::vector<std::size_t> param_sizes;  // from the cubin's .nv.info, else cuFuncGetParamInfo
  void* nvtx_name = nullptr;             // the NVTX string launches are marked with
  std::atomic<std::size_t> dynamic_shared_allowed{48 * 1024};
  // The parameter table, read from `result`'s PTX once, on first use (KernelHandle::signature):
  // the one kept for every binding and tool that launches with arguments typed at run time.
  const CompileResult* result = nullptr;  // the module's; it lives as long as this state
  std::once_flag signature_once;
  std::optional<KernelSignature> signature;
};

}  // namespace kjit::detail
