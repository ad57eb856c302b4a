// base::DynamicLibrary: the one loader of a library kjit opens at run time (libcuda, nvJitLink,
// CUPTI): dlopen of the first candidate that opens (RTLD_NOW | RTLD_LOCAL), then its function
// table filled by name (resolve), the names it lacks remembered for one message. A library once
// opened stays open for the process (kernels and callbacks may outlive any owner).
#pragma once

#include "core/base/tools_api.hpp"

#include <string>
#include <vector>

namespace kjit::base {

class KJIT_TOOLS_API DynamicLibrary {
public:
  // The first of `candidates` that opens; otherwise none, with why the first failed (and how
  // many others were tried too).
  static DynamicLibrary open_first(const std::vector<std::string>& candidates);

  explicit operator bool() const { return m_handle != nullptr; }
  const std::string& file() const { return m_file; }  // the candidate that opened
  const std::string& why() const { return m_why; }    // why none did

  // The address of `name`, or nullptr.
  void* symbol(const char* name) const;
  // One entry of a function table: `fn` = `name`'s address; a name it lacks is remembered.
  template <class Fn>
  void resolve(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(symbol(name));
    if (fn == nullptr) m_missing += (m_missing.empty() ? "" : ", ") + std::string(name);
  }
  // The names resolve() did not find, comma-separated; empty when the table is whole.
  const std::string& missing() const { return m_missing; }

private:
  void* m_handle = nullptr;
  std::string m_file;
  std::string m_why;
  std::string m_missing;
};

}  // namespace kjit::base
