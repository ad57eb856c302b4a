#include "core/base/nvrtc_library.hpp"

#include "core/base/dynamic_library.hpp"
#include "core/base/toolkit_location.hpp"
#include "core/cache/store_notes.hpp"
#include "core/system/file_io.hpp"
#include "core/system/hash.hpp"

#include <kjit/error.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <string_view>

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
std::atomic<bool> g_opening{false};                     // a thread is opening it (under g_nvrtc_mutex)
std::mutex g_fallbacks_mutex;
std::vector<std::string> g_fallbacks;                   // add_nvrtc_fallback's, under g_fallbacks_mutex
// The version nvrtc_facts() read from a kept answer (-1: none), and that answer's file: the open
// that follows checks it.
std::atomic<int> g_remembered_major{-1}, g_remembered_minor{-1};
std::unique_ptr<cache::StoreNotes> g_remembered_notes;  // set before g_remembered_major: its notes
std::string g_remembered_note;                           // and its name
thread_local bool t_nvrtc_opening = false;          // toolkit_roots() asks for the open library: not while opening it

// The glibc-hwcaps subfolders the loader tries before a folder itself, on this machine's kind.
#if defined(__x86_64__)
constexpr std::array<const char*, 3> k_hwcaps_levels{"x86-64-v4", "x86-64-v3", "x86-64-v2"};
#elif defined(__powerpc64__)
constexpr std::array<const char*, 2> k_hwcaps_levels{"power10", "power9"};
#elif defined(__s390x__)
constexpr std::array<const char*, 4> k_hwcaps_levels{"z16", "z15", "z14", "z13"};
#else
constexpr std::array<const char*, 0> k_hwcaps_levels{};
#endif

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

// Whether an object of NVRTC's file name (libnvrtc.so.<major>, or that with more of its version
// after it) is in this process: the loader's list, read without a search of the file system and
// without the lock an open holds while it maps and relocates (dl_iterate_phdr takes the list's own).
bool nvrtc_in_process() {
  struct Look {
    std::string soname;
    bool found = false;
  } look{nvrtc_soname()};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* l = static_cast<Look*>(data);
        if (info->dlpi_name == nullptr) return 0;
        const std::string_view name(info->dlpi_name);
        const std::string_view base = name.substr(name.find_last_of('/') == std::string_view::npos ? 0 : name.find_last_of('/') + 1);
        if (base == l->soname || (base.starts_with(l->soname) && base.size() > l->soname.size() && base[l->soname.size()] == '.')) {
          l->found = true;
          return 1;
        }
        return 0;
      },
      &look);
  return look.found;
}

std::string folders_listed() {
  std::string out;
  for (const char* folder : k_nvrtc_folders) out += fmt::format("{}{}/", out.empty() ? "" : ", ", folder);
  return out;
}

// Where NVRTC is looked for when no variable names a toolkit: the loader's own search, then the
// toolkit of kjit's build and /usr/local/cuda, then the fallbacks the program named.
std::vector<std::string> fallback_candidates() {
  std::vector<std::string> out{nvrtc_soname()};
  for (const std::filesystem::path& root :
       {std::filesystem::path(KJIT_CUDA_INCLUDE_DIR).parent_path(), std::filesystem::path("/usr/local/cuda")}) {
    for (const char* folder : k_nvrtc_folders) out.push_back((root / folder / nvrtc_soname()).string());
  }
  std::lock_guard lock(g_fallbacks_mutex);
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
    Opening() {
      t_nvrtc_opening = true;
      g_opening.store(true);
    }
    ~Opening() {
      t_nvrtc_opening = false;
      g_opening.store(false);
    }
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
  if (const int major = g_remembered_major.load(); major >= 0) {
    // The version a hit's key was made with came from a kept answer: the library opened must say
    // the same, or an entry would be written under another NVRTC's key.
    int opened_major = 0, opened_minor = 0;
    t->version(&opened_major, &opened_minor);
    if (opened_major != major || opened_minor != g_remembered_minor.load()) {
      (void)g_remembered_notes->remove(g_remembered_note);
      if (why != nullptr) {
        *why = fmt::format("NVRTC {} is version {}.{}, and this process's cache keys were made with {}.{}, the "
                           "version kept for it in the note {} (the library changed while the process ran); that answer is "
                           "removed: run the program again",
                           lib.file(), opened_major, opened_minor, major, g_remembered_minor.load(),
                           g_remembered_notes->path(g_remembered_note));
      }
      delete t;
      return nullptr;
    }
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

// `path` and its identity (device, inode, size, mtime, ctime: a file replaced, rewritten or touched
// differs; ctime cannot be set back), or "-" where it is not there; one line. Whether it is there.
bool add_identity(std::string& out, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    fmt::format_to(std::back_inserter(out), "{} -\n", path);
    return false;
  }
  fmt::format_to(std::back_inserter(out), "{} {} {} {} {}.{} {}.{}\n", path, st.st_dev, st.st_ino, st.st_size,
                 st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  return true;
}

// The paths /etc/ld.so.cache gives `soname` (glibc's format since 2.32, "glibc-ld.so.cache1.1": a
// 48-byte header, then entries of {flags, name offset, path offset, os version, hwcap}, offsets
// from the file's start); nullopt when the file is not of that format or cannot be read.
std::optional<std::vector<std::string>> loader_cache_paths(const std::string& soname) {
  const system::FileContent file = system::read_file("/etc/ld.so.cache", 64 << 20);
  if (!file.ok()) return std::nullopt;
  const std::string& bytes = file.bytes;
  constexpr std::string_view magic = "glibc-ld.so.cache1.1";
  constexpr std::size_t header = 48, entry = 24;
  if (bytes.size() < header || std::string_view(bytes).substr(0, magic.size()) != magic) return std::nullopt;
  auto u32 = [&bytes](std::size_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    return v;
  };
  const std::uint32_t count = u32(20);
  if (header + std::uint64_t{count} * entry > bytes.size()) return std::nullopt;
  // The NUL-terminated string at `at`, or nullopt past the file.
  auto text = [&bytes](std::uint32_t at) -> std::optional<std::string_view> {
    if (at >= bytes.size()) return std::nullopt;
    const std::size_t end = bytes.find('\0', at);
    if (end == std::string::npos) return std::nullopt;
    return std::string_view(bytes).substr(at, end - at);
  };
  std::vector<std::string> out;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t at = header + std::size_t{i} * entry;
    const auto name = text(u32(at + 4));
    const auto path = text(u32(at + 8));
    if (!name || !path) return std::nullopt;
    if (*name == soname) out.emplace_back(*path);
  }
  return out;
}

// A folder the loader searches for a bare soname; `system`: one of its built-in folders at the end
// of the list (glibc fills RTLD_DI_SERINFO's flags with 0: they are told by their names, the
// trailing run of /lib, /usr/lib, /lib64, /usr/lib64 and their <arch>-linux-gnu folders).
struct SearchFolder {
  std::string path;
  bool system = false;
};

bool system_folder(std::string_view path) {
  for (std::string_view top : {"/lib", "/usr/lib", "/lib64", "/usr/lib64"}) {
    if (path == top || path == std::string(top) + "/") return true;
    if (path.starts_with(std::string(top) + "/") && path.find("-linux-gnu") != std::string_view::npos &&
        path.find('/', top.size() + 1) == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// The folders the loader searches for a bare soname that libkjit (the object making the dlopen)
// asks for, in its order: DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, the system's (ld.so.cache,
// consulted before the system's folders, is the caller's to add).
std::vector<SearchFolder> loader_search_folders() {
  std::vector<SearchFolder> out;
  Dl_info info{};
  void* self = nullptr;
  if (dladdr(reinterpret_cast<void*>(&add_identity), &info) != 0 && info.dli_fname != nullptr) {
    self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  if (self == nullptr) self = dlopen(nullptr, RTLD_LAZY);  // linked into the program itself
  if (self == nullptr) return out;
  Dl_serinfo size{};
  if (dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0 && size.dls_size >= sizeof(Dl_serinfo)) {
    std::vector<std::max_align_t> storage(size.dls_size / sizeof(std::max_align_t) + 1);
    auto* list = reinterpret_cast<Dl_serinfo*>(storage.data());
    *list = size;
    if (dlinfo(self, RTLD_DI_SERINFO, list) == 0) {
      for (unsigned i = 0; i < list->dls_cnt; ++i) {
        if (list->dls_serpath[i].dls_name != nullptr) out.push_back({list->dls_serpath[i].dls_name});
      }
    }
  }
  dlclose(self);
  for (auto it = out.rbegin(); it != out.rend() && system_folder(it->path); ++it) it->system = true;
  return out;
}

// The kept answers' folder and format (nvrtc_facts).
constexpr std::string_view k_facts_header = "kjit nvrtc facts 1\n";

// The note that keeps the answer for `fingerprint`: nvrtc-<its hash>.
std::string facts_note(const std::string& fingerprint) {
  const std::uint64_t h = system::xxh3_64(fingerprint.data(), fingerprint.size());
  return fmt::format("nvrtc-{:016x}", h);
}

std::string facts_text(const NvrtcFacts& f, const std::string& fingerprint) {
  return fmt::format("{}version {} {}\narchs {}\n{}", k_facts_header, f.major, f.minor, fmt::join(f.archs, " "),
                     fingerprint);
}

// The answer kept in `text` (a note's bytes) when it names the same fingerprint; nullopt otherwise.
std::optional<NvrtcFacts> parse_kept_facts(const std::string& text, const std::string& fingerprint) {
  // "kjit nvrtc facts 1\nversion M m\narchs a b c\n" then the fingerprint, whole.
  std::string_view rest(text);
  auto line = [&rest]() -> std::optional<std::string_view> {
    const std::size_t end = rest.find('\n');
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view l = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    return l;
  };
  // The numbers after `word` on `l`, or nullopt where it is something else.
  auto numbers = [](std::optional<std::string_view> l, std::string_view word) -> std::optional<std::vector<int>> {
    if (!l || !l->starts_with(word)) return std::nullopt;
    std::vector<int> out;
    std::string_view s = l->substr(word.size());
    while (!s.empty()) {
      if (s.front() != ' ') return std::nullopt;
      s.remove_prefix(1);
      int v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc()) return std::nullopt;
      out.push_back(v);
      s.remove_prefix(static_cast<std::size_t>(end - s.data()));
    }
    return out;
  };
  const std::optional<std::string_view> header = line();
  if (!header || std::string(*header) + "\n" != k_facts_header) return std::nullopt;
  const std::optional<std::vector<int>> version = numbers(line(), "version");
  const std::optional<std::vector<int>> archs = numbers(line(), "archs");
  if (!version || version->size() != 2 || !archs || rest != fingerprint) return std::nullopt;
  NvrtcFacts f;
  f.major = (*version)[0];
  f.minor = (*version)[1];
  f.archs = *archs;
  return f;
}

// Asks the library (opening it if it is not yet); throws as nvrtc_table() does.
NvrtcFacts ask_nvrtc();

// Everything that decides which libnvrtc the next open takes, without opening it, one line each:
// the toolkit a variable names and its candidate files, or the loader's search (the folders
// RTLD_DI_SERINFO lists for libkjit with their glibc-hwcaps subfolders, /etc/ld.so.cache's identity
// and the paths it gives, between the run paths and the system's folders) and kjit's fallbacks;
// each candidate file's identity (device, inode, size, mtime, ctime) or its absence, in the open's
// order. Two equal fingerprints take the same file, unchanged. And the file it takes when
// nothing fails: the first candidate that is there, in the open's order (`taken`, empty where none
// is). The walk stops there: the loader takes that file, so nothing after it can change the
// choice; an answer is kept only when the library opened is that file (nvrtc_facts), so that a
// candidate that is there but does not load (another machine's, a broken file) keeps nothing.
struct Fingerprint {
  std::string text;   // empty: NVRTC is in the process already, ask it
  std::string taken;
};

Fingerprint search_fingerprint() {
  Fingerprint f;
  if (g_nvrtc_table.load(std::memory_order_acquire) != nullptr) return f;
  // A library this process loaded otherwise (a program linking NVRTC, CuPy) is the one opened. The
  // check takes the loader's lock: not while this process's own open holds it (the preparation's),
  // which takes such a library too, and checks the version against the answer used.
  if (!g_opening.load() && nvrtc_in_process()) return f;
  const std::string soname = nvrtc_soname();
  std::string& out = f.text;
  out = fmt::format("soname {}\n", soname);
  auto candidate = [&](const std::string& path) {
    if (!add_identity(out, path)) return false;
    f.taken = path;
    return true;
  };
  if (const std::optional<ToolkitVariable> named = named_toolkit()) {
    // That toolkit's files, by their paths, or an error (open_nvrtc_library): no search.
    fmt::format_to(std::back_inserter(out), "named {}={}\n", named->name, named->value);
    for (const char* folder : k_nvrtc_folders) {
      if (candidate((std::filesystem::path(named->value) / folder / soname).string())) return f;
    }
    return f;
  }
  out += "loader\n";
  // ld.so.cache, asked after LD_LIBRARY_PATH and the run paths, before the system's folders.
  bool cache_asked = false;
  auto ask_cache = [&] {
    cache_asked = true;
    add_identity(out, "/etc/ld.so.cache");
    const auto paths = loader_cache_paths(soname);
    if (!paths) {
      out += "ld.so.cache unread\n";
      return false;
    }
    bool there = false;
    for (const std::string& path : *paths) there = candidate(path) || there;
    return there;
  };
  for (const SearchFolder& folder : loader_search_folders()) {
    if (!cache_asked && folder.system && ask_cache()) return f;
    // glibc 2.33+ looks in a folder's glibc-hwcaps/<level>/ first (RTLD_DI_SERINFO lists none);
    // where there is no such folder, its absence is the line.
    const std::string hwcaps = folder.path + "/glibc-hwcaps";
    if (struct stat st {}; ::stat(hwcaps.c_str(), &st) != 0) {
      fmt::format_to(std::back_inserter(out), "{} -\n", hwcaps);
    } else {
      for (const char* level : k_hwcaps_levels) {
        if (candidate(hwcaps + "/" + level + "/" + soname)) return f;
      }
    }
    if (candidate(folder.path + "/" + soname)) return f;
  }
  if (!cache_asked && ask_cache()) return f;
  std::vector<std::string> candidates = fallback_candidates();
  candidates.erase(candidates.begin());  // the soname: the search above
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // A file listed twice (the build's toolkit is /usr/local/cuda) is opened, or not, once.
    if (std::find(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(i), candidates[i]) ==
            candidates.begin() + static_cast<std::ptrdiff_t>(i) &&
        candidate(candidates[i])) {
      return f;
    }
  }
  return f;
}

// Whether `a` and `b` name one file (device and inode).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return !a.empty() && !b.empty() && ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

const NvrtcFacts& nvrtc_facts(cache::StoreNotes* notes) {
  static const NvrtcFacts facts = [notes] {
    const Fingerprint fingerprint = notes != nullptr ? search_fingerprint() : Fingerprint{};
    if (fingerprint.text.empty()) return ask_nvrtc();  // loaded (asking costs nothing), or nowhere to keep an answer
    const std::string note = facts_note(fingerprint.text);
    if (auto text = notes->read(note); text && *text) {
      if (std::optional<NvrtcFacts> kept = parse_kept_facts(**text, fingerprint.text)) {
        g_remembered_notes = std::make_unique<cache::StoreNotes>(*notes);
        g_remembered_note = note;
        g_remembered_minor.store(kept->minor);
        g_remembered_major.store(kept->major);
        return *kept;
      }
    }
    NvrtcFacts asked = ask_nvrtc();
    // Kept for the next process where the library opened is the one the walk found (a folder that
    // cannot be written keeps nothing: asked again).
    if (same_file(nvrtc_library_file(), fingerprint.taken)) (void)notes->write(note, facts_text(asked, fingerprint.text));
    return asked;
  }();
  return facts;
}

namespace {

NvrtcFacts ask_nvrtc() {
  const NvrtcTable& t = nvrtc_table();
  NvrtcFacts f;
  t.version(&f.major, &f.minor);
  int n = 0;
  if (t.num_supported_archs(&n) == NVRTC_SUCCESS && n > 0) {
    f.archs.resize(static_cast<std::size_t>(n));
    if (t.supported_archs(f.archs.data()) != NVRTC_SUCCESS) f.archs.clear();
  }
  return f;
}

}  // namespace

void add_nvrtc_fallback(std::string file) {
  std::lock_guard lock(g_fallbacks_mutex);
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
