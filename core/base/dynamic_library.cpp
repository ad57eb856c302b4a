#include "core/base/dynamic_library.hpp"

#include <dlfcn.h>

namespace kjit::base {

DynamicLibrary DynamicLibrary::open_first(const std::vector<std::string>& candidates) {
  DynamicLibrary out;
  for (const auto& path : candidates) {
    if ((out.m_handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      out.m_file = path;
      out.m_why.clear();
      return out;
    }
    const char* e = dlerror();
    if (out.m_why.empty()) {
      // dlerror() names the file itself ("libcuda.so.1: cannot open shared object file: ..."),
      // except when it has nothing to say.
      const std::string why = e ? e : "unknown reason";
      out.m_why = why.starts_with(path + ":") ? why : path + ": " + why;
    }
  }
  if (candidates.size() > 1) out.m_why += " (and " + std::to_string(candidates.size() - 1) + " other places)";
  return out;
}

void* DynamicLibrary::symbol(const char* name) const {
  return m_handle != nullptr ? dlsym(m_handle, name) : nullptr;
}

}  // namespace kjit::base
