// kjit::Module: a compiled program loaded for a device (the cubin for the device's arch, or
// the PTX when there is no matching cubin), through the driver's context-independent loading
// where it has it: one load serves every device, and a kernel launches on the device of its
// stream (or the current context; the module's device when none is current). Cheap to copy:
// copies share the load, which is unloaded when the last copy goes. kernel() throws UsageError
// for a missing name, listing the names the module has.
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/global.hpp>
#include <kjit/kernel.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kjit {

class KernelSignature;  // <kjit/parameters.hpp>

namespace detail {
struct ModuleState;
}  // namespace detail
namespace driver {
struct ModuleAccess;
}  // namespace driver

class KJIT_API Module {
public:
  Module() = default;

  // A typed kernel: `name` is the kernel's name as written (extern "C"), a name expression
  // given to Program::instantiate, or a mangled name.
  template <class Signature>
  Kernel<Signature> kernel(std::string_view name) const {
    return Kernel<Signature>(kernel_handle(name));
  }
  // A __constant__ or __device__ variable: `name` as written, or a name expression given to
  // Program::instantiate ("&counter<int>", also found as "counter<int>"). T is its type, or E[]
  // for an array. Throws UsageError for a missing name (listing the module's variables) or a size
  // that does not fit T (both sizes).
  template <class T>
  Global<T> global(std::string_view name) const {
    if constexpr (std::is_unbounded_array_v<T>) {
      return Global<T>(global_handle(name, sizeof(std::remove_extent_t<T>), true));
    } else {
      return Global<T>(global_handle(name, sizeof(T), false));
    }
  }
  // The variable untyped: element_size 0 checks nothing; `array` accepts any multiple of it.
  GlobalHandle global_handle(std::string_view name, std::size_t element_size = 0, bool array = false) const;
  // The names of the module's __constant__ and __device__ variables (from its PTX).
  std::vector<std::string> global_names() const;
  // The kernel untyped (no signature check): launch_raw takes the argument pointers as they are.
  KernelHandle kernel_handle(std::string_view name) const;
  std::vector<std::string> kernel_names() const;
  // The driver's attributes of one kernel (registers, shared/local/const memory, max threads
  // per block) without a typed handle. Throws UsageError for a missing name.
  KernelAttributes attributes(std::string_view name) const;
  bool has_kernel(std::string_view name) const;
  // The kernel's real parameter list (from the PTX and its mangled name), for arguments typed
  // at run time (include/kjit/parameters.hpp): KernelSignature::of(compile_result(), name).
  KernelSignature signature(std::string_view name) const;

  // The same compiled result on another device. The driver loads a compiled result once for
  // every device (context-independent loading, CUDA 12+): a module of the same result on another
  // device shares that load (a cubin only across devices of its arch). Runtime::load does this.
  Module on(Device device) const;
  // Whether the two modules share one load (see on()).
  bool shares_code_with(const Module& other) const;

  Device device() const;
  const CompileResult& compile_result() const;
  // How the Runtime::load that returned this module answered: registry (already loaded by this
  // Runtime), hit, remote_hit, compiled or waited. A copy keeps it; on() gives registry.
  Outcome outcome() const noexcept { return m_outcome; }
  explicit operator bool() const { return static_cast<bool>(m_state); }

private:
  friend struct driver::ModuleAccess;  // the Runtime's registry: the one way to a new load
  // Loads `result` on `device`; throws CudaError (with the program, key and arch) when the
  // driver refuses the image.
  Module(CompileResult result, Device device);

  std::shared_ptr<detail::ModuleState> m_state;
  Outcome m_outcome = Outcome::registry;
};

}  // namespace kjit
