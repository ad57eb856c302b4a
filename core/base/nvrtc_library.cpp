#include "core/base/nvrtc_library.hpp"

#include "core/base/dynamic_library.hpp"
#include "core/base/toolkit_location.hpp"

#include <kjit/error.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>

namespace kjit::base {
namespace {

// libnvrtc.so.<the major version kjit was built with>; a function: libkjit does nothing at load time.
std::string nvrtc_soname() { return "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000); }

// X(field, name): every NVRTC entry point kjit calls, one row each.
#define KJIT_NVRTC_FUNCTIONS(X)                                                                             \
  X(get_error_string, nvrtcGetErrorString) X(version, nvrtcVersion) X(num_supported_archs, nvrtcGetNumSupportedArchs) \
  X(supported_archs, nvrtcGetSupportedArchs) X(create_program, nvrtcCreateProgram)                          \
  X(destroy_program, nvrtcDestroyProgram) X(compile_program, nvrtcCompileProgram) X(ptx_size, nvrtcGetPTXSize) \
  X(ptx, nvrtcGetPTX) X(cubin_size, nvrtcGetCUBINSize) X(cubin, nvrtcGetCUBIN) X(ltoir_size, nvrtcGetLTOIRSize) \
  X(ltoir, nvrtcGetLTOIR) X(log_size, nvrtcGetProgramLogSize) X(log, nvrtcGetProgramLog)                  \
  X(add_name_expression, nvrtcAddNameExpression) X(lowered_name, nvrtcGetLoweredName)                    \
  X(pch_heap_size, nvrtcGetPCHHeapSize) X(set_pch_heap_size, nvrtcSetPCHHeapSize)                          \
  X(pch_create_status, nvrtcGetPCHCreateStatus) X(pch_heap_size_required, nvrtcGetPCHHeapSizeRequired)

struct NvrtcTable {
#define KJIT_NVRTC_FIELD(field, name) decltype(&::name) field = nullptr;
  KJIT_NVRTC_FUNCTIONS(KJIT_NVRTC_FIELD)
#undef KJIT_NVRTC_FIELD
  std::string file;
};

std::mutex g_nvrtc_mutex;
std::atomic<const NvrtcTable*> g_nvrtc_table{nullptr};  // set once, never freed: the library stays open
std::vector<std::string> g_fallbacks;                   // add_nvrtc_fallback's, under g_nvrtc_mutex
thread_local bool t_nvrtc_opening = false;          // toolkit_roots() asks for the open library: not while opening it

constexpr const char* k_nvrtc_folders[] = {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"};

// The path of the libnvrtc already in this process (dlopen by that path returns the same object), or "".
std::string loaded_nvrtc() {
  std::string out;
  if (void* loaded = dlopen(nvrtc_soname().c_str(), RTLD_NOW | RTLD_NOLOAD); loaded != nullptr) {
    link_map* map = nullptr;
    if (dlinfo(loaded, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
      out = map->l_name;
    }
    dlclose(loaded);
  }
  return out;
}

std::string folders_listed() {
  std::string out;
  for (const char* folder : k_nvrtc_folders) out += fmt::format("{}{}/", out.empty() ? "" : ", ", folder);
  return out;
}

// Where NVRTC is looked for when no variable names a toolkit: the loader's own search, then the
// toolkit of kjit's build and /usr/local/cuda, then the fallbacks the program named. Under g_nvrtc_mutex.
std::vector<std::string> fallback_candidates() {
  std::vector<std::string> out{nvrtc_soname()};
  for (const std::filesystem::path& root :
       {std::filesystem::path(KJIT_CUDA_INCLUDE_DIR).parent_path(), std::filesystem::path("/usr/local/cuda")}) {
    for (const char* folder : k_nvrtc_folders) out.push_back((root / folder / nvrtc_soname()).string());
  }
  out.insert(out.end(), g_fallbacks.begin(), g_fallbacks.end());  // the program's own (add_nvrtc_fallback)
  return out;
}

// The library, opened as nvrtc_library.hpp says; `why` says why none was when it is not.
DynamicLibrary open_nvrtc_library(std::string& why) {
  const std::string soname = nvrtc_soname();
  if (const std::string loaded = loaded_nvrtc(); !loaded.empty()) {
    DynamicLibrary lib = DynamicLibrary::open_first({loaded});
    if (lib) return lib;
  }
  if (const std::optional<ToolkitVariable> named = named_toolkit()) {
    // That toolkit's NVRTC, or an error: its headers are the ones NVRTC is given (toolkit_roots),
    // and another toolkit's NVRTC with them would compile against headers of another version.
    std::vector<std::string> files;
    for (const auto& f : nvrtc_files_in(named->value)) files.push_back(f.string());
    if (files.empty()) {
      why = fmt::format("opening NVRTC ({}): {}={} names the CUDA toolkit, and it has no {} (in {}). Name a CUDA {} "
                        "toolkit, or unset {} to take the loader's",
                        soname, named->name, named->value, soname, folders_listed(), CUDA_VERSION / 1000,
                        named->name);
      return {};
    }
    DynamicLibrary lib = DynamicLibrary::open_first(files);
    if (!lib) {
      why = fmt::format("opening NVRTC ({}): {}={} names the CUDA toolkit, and its NVRTC cannot be opened: {}. kjit "
                        "takes no other toolkit's NVRTC with this one's headers: repair or reinstall the toolkit, name "
                        "another, or unset {} to take the loader's",
                        soname, named->name, named->value, lib.why(), named->name);
    }
    return lib;
  }
  DynamicLibrary lib = DynamicLibrary::open_first(fallback_candidates());
  if (!lib) {
    std::vector<std::string> set;
    for (const ToolkitVariable& v : toolkit_variables()) set.push_back(fmt::format("{}={}", v.name, v.value));
    why = fmt::format("opening NVRTC ({}): {}; {}. Set KJIT_CUDA_HOME (or CUDA_HOME, CUDA_PATH) to the CUDA toolkit's "
                      "root, or add the folder of {} to LD_LIBRARY_PATH",
                      soname, lib.why(),
                      set.empty() ? std::string("none of KJIT_CUDA_HOME, CUDA_HOME, CUDA_PATH is set")
                                  : fmt::format("{} name{} no toolkit (no include/ folder, no {})", fmt::join(set, ", "),
                                                set.size() == 1 ? "s" : "", soname),
                      soname);
  }
  return lib;
}

// The table, opening NVRTC on first use; null (and `why`) when none opens.
const NvrtcTable* open_nvrtc_table(std::string* why) {
  if (const NvrtcTable* t = g_nvrtc_table.load(std::memory_order_acquire)) return t;
  if (t_nvrtc_opening) return nullptr;
  std::lock_guard lock(g_nvrtc_mutex);
  if (const NvrtcTable* t = g_nvrtc_table.load(std::memory_order_acquire)) return t;
  struct Opening {
    Opening() { t_nvrtc_opening = true; }
    ~Opening() { t_nvrtc_opening = false; }
  };
  std::string not_opened;
  DynamicLibrary lib = [&] {
    const Opening opening;
    return open_nvrtc_library(not_opened);
  }();
  if (!lib) {
    if (why != nullptr) *why = std::move(not_opened);
    return nullptr;
  }
  auto* t = new NvrtcTable;  // never freed, as the library is never closed
#define KJIT_NVRTC_RESOLVE(field, name) lib.resolve(t->field, #name);
  KJIT_NVRTC_FUNCTIONS(KJIT_NVRTC_RESOLVE)
#undef KJIT_NVRTC_RESOLVE
  if (!lib.missing().empty()) {
    if (why != nullptr) *why = fmt::format("NVRTC {} lacks {}: an older NVRTC than kjit was built with", lib.file(), lib.missing());
    delete t;
    return nullptr;
  }
  t->file = lib.file();
  if (void* h = dlopen(t->file.c_str(), RTLD_NOW | RTLD_NOLOAD); h != nullptr) {  // its real path, for messages
    link_map* map = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
      t->file = map->l_name;
    }
    dlclose(h);
  }
  g_nvrtc_table.store(t, std::memory_order_release);
  return t;
}

const NvrtcTable& nvrtc_table() {
  std::string why;
  if (const NvrtcTable* t = open_nvrtc_table(&why)) return *t;
  throw UnavailableError(why.empty() ? fmt::format("opening NVRTC ({}): already being opened", nvrtc_soname()) : why);
}

}  // namespace

void add_nvrtc_fallback(std::string file) {
  std::lock_guard lock(g_nvrtc_mutex);
  if (std::find(g_fallbacks.begin(), g_fallbacks.end(), file) == g_fallbacks.end()) g_fallbacks.push_back(std::move(file));
}

std::vector<std::filesystem::path> nvrtc_files_in(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  for (const char* folder : k_nvrtc_folders) {
    std::error_code ec;
    const std::filesystem::path file = root / folder / nvrtc_soname();
    if (std::filesystem::symlink_status(file, ec).type() != std::filesystem::file_type::not_found && !ec) {
      out.push_back(file);
    }
  }
  return out;
}

std::string nvrtc_library_file() {
  const NvrtcTable* t = open_nvrtc_table(nullptr);
  return t != nullptr ? t->file : std::string();
}

}  // namespace kjit::base

// The entry points libkjit calls (declared by nvrtc.h), each forwarding to the library opened.
using kjit::base::nvrtc_table;
extern "C" {
const char* nvrtcGetErrorString(nvrtcResult result) { return nvrtc_table().get_error_string(result); }
nvrtcResult nvrtcVersion(int* major, int* minor) { return nvrtc_table().version(major, minor); }
nvrtcResult nvrtcGetNumSupportedArchs(int* count) { return nvrtc_table().num_supported_archs(count); }
nvrtcResult nvrtcGetSupportedArchs(int* archs) { return nvrtc_table().supported_archs(archs); }
nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name, int num_headers,
                               const char* const* headers, const char* const* include_names) {
  return nvrtc_table().create_program(prog, src, name, num_headers, headers, include_names);
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) { return nvrtc_table().destroy_program(prog); }
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int num_options, const char* const* options) {
  return nvrtc_table().compile_program(prog, num_options, options);
}
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* size) { return nvrtc_table().ptx_size(prog, size); }
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) { return nvrtc_table().ptx(prog, ptx); }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) { return nvrtc_table().cubin_size(prog, size); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) { return nvrtc_table().cubin(prog, cubin); }
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t* size) { return nvrtc_table().ltoir_size(prog, size); }
nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char* ltoir) { return nvrtc_table().ltoir(prog, ltoir); }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) { return nvrtc_table().log_size(prog, size); }
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) { return nvrtc_table().log(prog, log); }
nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* const name_expression) {
  return nvrtc_table().add_name_expression(prog, name_expression);
}
nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* const name_expression, const char** lowered_name) {
  return nvrtc_table().lowered_name(prog, name_expression, lowered_name);
}
nvrtcResult nvrtcGetPCHHeapSize(size_t* size) { return nvrtc_table().pch_heap_size(size); }
nvrtcResult nvrtcSetPCHHeapSize(size_t size) { return nvrtc_table().set_pch_heap_size(size); }
nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram prog) { return nvrtc_table().pch_create_status(prog); }
nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram prog, size_t* size) {
  return nvrtc_table().pch_heap_size_required(prog, size);
}
}
