// kjit::Module: a compiled program loaded on one device (the cubin for the device's arch, or
// the PTX when there is no matching cubin). Cheap to copy: copies share the loaded module,
// which is unloaded when the last copy goes. kernel() throws UsageError for a missing name,
// listing the names the module has.
#pragma once

#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/kernel.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

namespace detail {
struct ModuleState;
// The kernel's state; the pointer keeps the module loaded.
std::shared_ptr<KernelState> kernel_state(const std::shared_ptr<ModuleState>& module, std::string_view name);
// The same, then check_signature: one call for Module::kernel<>().
std::shared_ptr<KernelState> kernel_state(const std::shared_ptr<ModuleState>& module, std::string_view name,
                                          const std::size_t* sizes, std::size_t count,
                                          const char* const* type_names);
}  // namespace detail

class Module {
public:
  Module() = default;
  // Loads `result` on `device`; throws CudaError (with the program, key and arch) when the
  // driver refuses the image.
  Module(CompileResult result, Device device);

  // A typed kernel: `name` is the kernel's name as written (extern "C"), a name expression
  // given to Program::instantiate, or a mangled name.
  template <class Signature>
  Kernel<Signature> kernel(std::string_view name) const {
    using Info = detail::SignatureInfo<Signature>;
    return Kernel<Signature>(detail::Checked{},
                             detail::kernel_state(m_state, name, Info::sizes, Info::count, Info::names));
  }
  std::vector<std::string> kernel_names() const;
  // The driver's attributes of one kernel (registers, shared/local/const memory, max threads
  // per block) without a typed handle. Throws UsageError for a missing name.
  KernelAttributes attributes(std::string_view name) const;
  bool has_kernel(std::string_view name) const;

  Device device() const;
  const CompileResult& compile_result() const;
  explicit operator bool() const { return static_cast<bool>(m_state); }

private:
  std::shared_ptr<detail::ModuleState> m_state;
};

}  // namespace kjit
