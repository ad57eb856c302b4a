// kjit::KernelLoader: search path, manifests per root, requests through make_kernel_request,
// and hot reload by stat + content hash of every file a kernel reads.
#include <kjit/error.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>

#include "core/base/source_file.hpp"
#include "core/system/hash.hpp"
#include "core/base/environment.hpp"
#include "core/compile/scan/include_scanner.hpp"
#include "core/loader/kernel_request.hpp"
#include "core/compile/options/option_marshalling.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace kjit {
namespace {


// What a stat says about a file; a change makes the loader re-hash its content.
struct StatSignature {
  bool exists = false;
  std::int64_t mtime_ns = 0;
  std::uint64_t size = 0, inode = 0;
  friend bool operator==(const StatSignature&, const StatSignature&) = default;
};

StatSignature stat_of(const std::filesystem::path& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return {};
  return {true, st.st_mtim.tv_sec * 1'000'000'000ll + st.st_mtim.tv_nsec, static_cast<std::uint64_t>(st.st_size),
          static_cast<std::uint64_t>(st.st_ino)};
}

std::uint64_t content_hash(const std::filesystem::path& p) {
  system::FileContent f = base::read_source_file(p);
  return f.ok() ? system::xxh3_64(f.bytes.data(), f.bytes.size()) : 0;
}

struct WatchedFile {
  std::filesystem::path path;
  StatSignature stat;
  std::uint64_t hash = 0;  // 0: missing
};

// One (file, variant) made into a request, with what it read (for hot reload).
struct Prepared {
  explicit Prepared(loader::KernelRequest r) : request(std::move(r)) {}
  loader::KernelRequest request;
  std::uint64_t generation = 0;
  std::mutex check_mutex;  // guards `watched` while checking
  std::vector<WatchedFile> watched;
};

struct LoadedModule {
  Module module;
  std::uint64_t generation = 0;
};

}  // namespace

struct KernelLoader::Impl {
  Runtime& rt;
  LoaderOptions options;
  bool hot = false;
  std::vector<std::filesystem::path> search_path;
  std::vector<std::string> searched;  // every root considered, with where it came from (for errors)

  mutable std::shared_mutex mutex;
  mutable std::map<std::filesystem::path, std::shared_ptr<const Manifest>> manifests;  // null: none
  std::unordered_map<std::string, std::shared_ptr<Prepared>> prepared;  // file \0 variant
  // What a (file, variant, device) lookup returned, so that a repeat reads no file; the modules
  // themselves live in the Runtime's registry, shared with every other loader of that Runtime.
  std::unordered_map<std::string, LoadedModule> modules;                // file \0 variant \0 device
  std::atomic<std::uint64_t> generations{0};

  Impl(LoaderOptions o, Runtime& runtime) : rt(runtime), options(std::move(o)) {
    hot = options.hot_reload || (options.use_environment && base::env_flag(base::Env::hot_reload));
    auto add = [&](const std::filesystem::path& dir, std::string_view origin) {
      std::error_code ec;
      auto abs = std::filesystem::absolute(dir, ec).lexically_normal();
      if (ec) abs = dir;
      bool exists = std::filesystem::is_directory(abs, ec);
      searched.push_back(fmt::format("{} ({}{})", abs.string(), origin, exists ? "" : ", missing"));
      if (exists && std::find(search_path.begin(), search_path.end(), abs) == search_path.end()) {
        search_path.push_back(abs);
      }
    };
    if (options.use_environment) {
      for (const auto& part : base::env_path_list(base::Env::kernel_path)) {
        add(std::filesystem::path(part), "KJIT_KERNEL_PATH");
      }
    }
    for (const auto& f : options.folders) add(f, "folder");
    if (options.use_installed) {
      if (auto dir = installed_kernels_dir(); !dir.empty()) add(dir, "installed kernels_src");
    }
  }

  Located find(std::string_view file) const {
    std::filesystem::path rel = std::filesystem::path(std::string(file)).lexically_normal();
    if (file.empty() || rel.is_absolute() || rel.generic_string().starts_with("..")) {
      throw UsageError(fmt::format("finding kernel file \"{}\": expected a path relative to a search root", file));
    }
    std::error_code ec;
    for (const auto& root : search_path) {
      if (std::filesystem::is_regular_file(root / rel, ec)) return {root, rel.generic_string(), root / rel};
    }
    throw IoError(fmt::format("finding kernel file {}: not found in the search path: {}", rel.generic_string(),
                              searched.empty() ? std::string("(empty)") : fmt::format("{}", fmt::join(searched, ", "))));
  }

  std::shared_ptr<const Manifest> manifest(const std::filesystem::path& root) const {
    {
      std::shared_lock lock(mutex);
      if (auto it = manifests.find(root); it != manifests.end()) return it->second;
    }
    std::shared_ptr<const Manifest> m;
    std::error_code ec;
    if (std::filesystem::exists(root / Manifest::k_file_name, ec)) {
      m = std::make_shared<const Manifest>(Manifest::read(root / Manifest::k_file_name));
    }
    std::unique_lock lock(mutex);
    return manifests.emplace(root, m).first->second;
  }

  // Builds the request for (file, variant) from the files as they are now.
  std::shared_ptr<Prepared> build(std::string_view file, std::string_view variant, bool fresh_manifest) {
    Located where = find(file);
    if (fresh_manifest) {
      std::unique_lock lock(mutex);
      manifests.erase(where.root);
    }
    auto m = manifest(where.root);
    std::string source = base::read_text_file(where.path, "kernel file");
    std::uint64_t source_hash = hot ? system::xxh3_64(source.data(), source.size()) : 0;
    auto p = std::make_shared<Prepared>(loader::make_kernel_request(where.root, where.relative, std::move(source),
                                                                     m ? m->find(where.relative) : nullptr, variant,
                                                                     search_path, options.options));
    p->generation = ++generations;
    if (hot) {
      p->watched.push_back({where.path, stat_of(where.path), source_hash});
      // Places that would shadow what was found, were a file to appear there: the kernel file
      // in an earlier search root, a header earlier along its include path. Watched as absent.
      std::vector<std::filesystem::path> absent;
      for (const auto& root : search_path) {
        if (root == where.root) break;
        absent.push_back(root / where.relative);
      }
      auto manifest_path = where.root / Manifest::k_file_name;
      p->watched.push_back({manifest_path, stat_of(manifest_path), content_hash(manifest_path)});
      // The headers NVRTC reads, found as the cache key finds them.
      const Program& prog = p->request.program;
      std::vector<std::filesystem::path> dirs = normalized(p->request.options).include_dirs;
      dirs.insert(dirs.end(), prog.include_path().begin(), prog.include_path().end());
      std::vector<std::string> in_memory;
      compile::IncludeScanner scanner(std::move(dirs), std::move(in_memory));
      for (auto& h : scanner.scan(prog.source(), prog.directory(), &absent)) {
        p->watched.push_back({h.path, stat_of(h.path), system::xxh3_64(h.content.data(), h.content.size())});
      }
      for (auto& a : absent) p->watched.push_back({a, stat_of(a), 0});
    }
    return p;
  }

  // True when a watched file's content changed (a stat change alone re-hashes and updates).
  static bool stale(Prepared& p) {
    std::lock_guard lock(p.check_mutex);
    for (auto& w : p.watched) {
      StatSignature now = stat_of(w.path);
      if (now == w.stat) continue;
      std::uint64_t h = now.exists ? content_hash(w.path) : 0;
      if (h != w.hash) return true;
      w.stat = now;
    }
    return false;
  }

  std::shared_ptr<Prepared> prepare(std::string_view file, std::string_view variant) {
    std::string key = std::string(file) + '\0' + std::string(variant);
    std::shared_ptr<Prepared> p;
    {
      std::shared_lock lock(mutex);
      if (auto it = prepared.find(key); it != prepared.end()) p = it->second;
    }
    if (p && !(hot && stale(*p))) return p;
    auto fresh = build(file, variant, /*fresh_manifest=*/p != nullptr);
    std::unique_lock lock(mutex);
    prepared[key] = fresh;
    return fresh;
  }
};

KernelLoader::KernelLoader(LoaderOptions options, Runtime& runtime)
    : m_impl(std::make_unique<Impl>(std::move(options), runtime)) {}
KernelLoader::~KernelLoader() = default;

CompileResult KernelLoader::compile(std::string_view file, std::string_view variant, const Arch& arch) {
  auto p = m_impl->prepare(file, variant);
  return m_impl->rt.compile(p->request.program, p->request.options.with_arch(arch));
}

Module KernelLoader::load(std::string_view file, std::string_view variant, std::optional<Device> device) {
  Impl& im = *m_impl;
  Device dev = device ? *device : Device::current();
  std::string key = std::string(file) + '\0' + std::string(variant) + '\0' + std::to_string(dev.ordinal());
  if (!im.hot) {
    std::shared_lock lock(im.mutex);
    if (auto it = im.modules.find(key); it != im.modules.end()) return it->second.module;
  }
  auto p = im.prepare(file, variant);
  {
    std::shared_lock lock(im.mutex);
    if (auto it = im.modules.find(key); it != im.modules.end() && it->second.generation == p->generation) {
      return it->second.module;
    }
  }
  // Without hot reload, the Runtime's request registry answers (files are taken as unchanging,
  // as the loader itself takes them). With it, a request's key covers the headers it reads now:
  // compile (usually a disk hit), then share the module by that key.
  Module m = im.hot ? im.rt.load(im.rt.compile(p->request.program,
                                               p->request.options.with_arch(im.rt.resolve(p->request.options.arch, dev))),
                                 dev)
                    : im.rt.load(p->request.program, p->request.options, dev);
  std::unique_lock lock(im.mutex);
  im.modules[key] = {m, p->generation};
  return m;
}

KernelLoader::Located KernelLoader::find(std::string_view file) const { return m_impl->find(file); }

std::pair<Program, CompileOptions> KernelLoader::request(std::string_view file, std::string_view variant) const {
  auto p = m_impl->prepare(file, variant);
  return {p->request.program, p->request.options};
}

TuneSpec KernelLoader::tuning(std::string_view file, std::string_view name) const {
  const Located where = find(file);
  const auto m = m_impl->manifest(where.root);
  const ManifestKernel* entry = m ? m->find(where.relative) : nullptr;
  if (entry == nullptr) {
    throw UsageError(fmt::format("looking up tuning entry \"{}\" of kernel file {}: the file has no entry in {}", name,
                                 where.path.string(), (where.root / Manifest::k_file_name).string()));
  }
  return entry->tuning_spec(name);
}

const std::vector<std::filesystem::path>& KernelLoader::search_path() const { return m_impl->search_path; }
bool KernelLoader::hot_reload() const { return m_impl->hot; }
Runtime& KernelLoader::runtime() const { return m_impl->rt; }

std::filesystem::path KernelLoader::installed_kernels_dir() {
  static const std::filesystem::path dir = [] {
    std::vector<std::filesystem::path> candidates;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&KernelLoader::installed_kernels_dir), &info) && info.dli_fname) {
      candidates.push_back(std::filesystem::path(info.dli_fname).parent_path() / ".." / "share" / "kjit" /
                           "kernels_src");
    }
    candidates.emplace_back(KJIT_INSTALL_KERNELS_DIR);
    candidates.emplace_back(KJIT_KERNELS_SRC_DIR);
    std::error_code ec;
    for (const auto& c : candidates) {
      if (std::filesystem::is_directory(c, ec)) return std::filesystem::weakly_canonical(c, ec);
    }
    return std::filesystem::path();
  }();
  return dir;
}

}  // namespace kjit
