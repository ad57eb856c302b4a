// kjit::Kernel<void(Args...)>: a typed handle to one kernel of a loaded module, and
// kjit::LaunchConfig. Arguments convert to the declared parameter types at compile time (a
// wrong type does not compile). When a typed kernel is made, the declared list is checked
// once against the kernel's real one (cuFuncGetParamInfo); a mismatch throws UsageError that
// shows both. launch() builds the argument array on the stack and calls the driver: no heap
// allocation, no lock, no system call. It runs on the device of its stream whatever context is
// current, and leaves the caller's current context as it found it. It throws CudaError when the
// driver refuses and ArgumentError for a stream of another device than LaunchConfig::device.
#pragma once

#include <kjit/export.hpp>

#include <kjit/error.hpp>
#include <kjit/stream.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

struct CUfunc_st;
struct CUstream_st;

namespace kjit {

class KernelSignature;

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

constexpr unsigned ceil_div(std::size_t n, std::size_t d) { return static_cast<unsigned>((n + d - 1) / d); }

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::size_t shared_mem = 0;       // dynamic shared memory, bytes
  StreamRef stream;                 // a kjit::Stream, a raw CUstream, or {}: the default stream
  Dim3 cluster{0, 0, 0};            // thread block cluster dims (cuLaunchKernelEx) when x > 0
  bool cooperative = false;         // cooperative launch (grid-wide sync)
  // The device the arguments live on, or -1. A launch runs on its stream's device (a stream of
  // another device than `device` is an ArgumentError naming both); on the default stream it runs
  // on `device`, else on the device its module was loaded for. Whatever context was current is
  // current again when the launch returns (torch's CUDAGuard).
  int device = -1;
};

// Per-kernel attributes, read from the driver.
struct KernelAttributes {
  int registers = 0;
  std::size_t static_shared_bytes = 0;
  std::size_t max_dynamic_shared_bytes = 0;  // currently allowed dynamic shared memory
  std::size_t local_bytes = 0;               // per-thread local memory (spills, stack arrays)
  std::size_t const_bytes = 0;
  int max_threads_per_block = 0;
  int ptx_version = 0;
  int binary_version = 0;
};

namespace detail {

// The state of one kernel in a loaded module, shared by every handle to it (opaque: defined in
// the library).
struct KernelState;

template <class T>
constexpr const char* type_name() {
#if defined(__GNUC__)
  return __PRETTY_FUNCTION__;
#else
  return typeid(T).name();
#endif
}

// A signature's declared parameter sizes and type names, as constants (no run-time init).
template <class Signature>
struct SignatureInfo;
template <class... Params>
struct SignatureInfo<void(Params...)> {
  static constexpr std::size_t count = sizeof...(Params);
  static constexpr std::size_t sizes[] = {sizeof(std::decay_t<Params>)..., 0};
  static constexpr const char* names[] = {type_name<Params>()..., nullptr};
};

}  // namespace detail

// One kernel of a loaded module, untyped: what every Kernel<Signature> is. launch_raw takes the
// driver's array of argument pointers as it is (no check); prefer the typed Kernel<>.
class KJIT_API KernelHandle {
public:
  KernelHandle() = default;

  // Launch through the driver: no allocation, no lock, no system call.
  void launch_raw(const LaunchConfig& config, void** args) const;
  KernelAttributes attributes() const;
  int max_active_blocks_per_sm(int block_size, std::size_t dynamic_shared = 0) const;
  int suggested_block_size(std::size_t dynamic_shared = 0) const;
  const std::string& name() const;
  CUfunc_st* handle() const;
  // The kernel's parameter table (<kjit/parameters.hpp>), read from its PTX on the first call and
  // kept with the kernel: every handle to it shares one. `source`, given on that first call, names
  // the parameters from the kernel's declaration (KernelSignature::read_declaration).
  const KernelSignature& signature(std::string_view source = {}) const;
  explicit operator bool() const { return static_cast<bool>(m_state); }

protected:
  friend class Module;
  explicit KernelHandle(std::shared_ptr<detail::KernelState> state) : m_state(std::move(state)) {}
  // Compares the declared parameter sizes with the kernel's, and declared pointer types with the
  // element types the kernel's PTX and name give (`const double*` for a `const float*`
  // parameter); throws UsageError with both.
  void check_signature(const std::size_t* sizes, std::size_t count, const char* const* type_names) const;

  std::shared_ptr<detail::KernelState> m_state;
};

template <class Signature>
class Kernel;

template <class... Params>
class Kernel<void(Params...)> : public KernelHandle {
  static_assert((std::is_trivially_copyable_v<std::decay_t<Params>> && ...),
                "kernel parameters must be trivially copyable");

public:
  Kernel() = default;
  // Checks the declared list against the kernel's real one (Module::kernel<>() makes these).
  explicit Kernel(KernelHandle kernel) : KernelHandle(std::move(kernel)) {
    using Info = detail::SignatureInfo<void(Params...)>;
    check_signature(Info::sizes, Info::count, Info::names);
  }

  // Arguments convert to the declared types here, at compile time.
  void launch(const LaunchConfig& config, std::type_identity_t<Params>... args) const {
    if constexpr (sizeof...(Params) == 0) {
      launch_raw(config, nullptr);
    } else {
      void* pointers[] = {const_cast<void*>(static_cast<const void*>(&args))...};
      launch_raw(config, pointers);
    }
  }
  void operator()(const LaunchConfig& config, std::type_identity_t<Params>... args) const {
    launch(config, args...);
  }
};

}  // namespace kjit
