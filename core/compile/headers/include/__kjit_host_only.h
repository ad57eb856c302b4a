// What kjit's host-only headers (<iostream>, <vector>, <string>, <map>, <memory>, <thread>, ...)
// declare: the names a kernel file uses in its host code and prototypes, so that the file
// compiles under NVRTC as it does under nvcc; using one in device code is a compile error that
// names the header and says it is host-only. Nothing here defines a variable or a function body
// that a kernel does not call.
#pragma once
#include "__kjit_config.h"
namespace std {
namespace __kjit {
template <class...> inline constexpr bool __host_only = false;
}  // namespace __kjit
}  // namespace std
#define __KJIT_HOST_ONLY_MESSAGE(what, header)                                                           \
  "std::" what " (" header ") is host-only under NVRTC: kjit compiles device code only. Keep host code " \
  "inside #ifndef __CUDACC_RTC__ ... #endif, or use a device facility instead (docs/headers.md)"
// A class template (std::vector<T>, std::map<K, V>): naming it in a prototype compiles; making one
// in device code fails with the message.
#define __KJIT_HOST_ONLY_TEMPLATE(name, header)                                                          \
  template <class... _Args> class name {                                                                 \
    static_assert(::std::__kjit::__host_only<_Args...>, __KJIT_HOST_ONLY_MESSAGE(#name, header));         \
  };
// A class template a host class holds by value (struct Named { std::string_view name; }): complete,
// so that the host class compiles; constructing or destroying one in device code fails with the message.
#define __KJIT_HOST_ONLY_VALUE_TEMPLATE(name, header)                                                    \
  template <class... _Args> class name {                                                                 \
   public:                                                                                               \
    __KJIT_HD name() { static_assert(::std::__kjit::__host_only<_Args...>, __KJIT_HOST_ONLY_MESSAGE(#name, header)); } \
    template <class... _Init> __KJIT_HD name(_Init&&...) {                                                 \
      static_assert(::std::__kjit::__host_only<_Init...>, __KJIT_HOST_ONLY_MESSAGE(#name, header));      \
    }                                                                                                    \
  };
// A class (std::mutex, std::thread).
#define __KJIT_HOST_ONLY_CLASS(name, header)                                                             \
  template <class _Tp = void> class __kjit_host_##name {                                                 \
    static_assert(::std::__kjit::__host_only<_Tp>, __KJIT_HOST_ONLY_MESSAGE(#name, header));              \
  };                                                                                                     \
  typedef __kjit_host_##name<> name;
// A function (std::to_string, std::make_unique, std::this_thread::sleep_for).
#define __KJIT_HOST_ONLY_FUNCTION(name, header)                                                          \
  template <class... _Args> __KJIT_HD void name(_Args&&...) {                                            \
    static_assert(::std::__kjit::__host_only<_Args...>, __KJIT_HOST_ONLY_MESSAGE(#name, header));         \
  }
namespace std {
// <vector>, <memory>, <string>, <map>, ... all name it.
__KJIT_HOST_ONLY_TEMPLATE(allocator, "<memory>")
}  // namespace std
