#include "core/link/nvjitlink_linker.hpp"

#include "core/base/dynamic_library.hpp"
#include "core/base/toolkit_location.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <cuda.h>
// Only the types: the entry points come from base::DynamicLibrary (calling the header's inline
// wrappers would need libnvJitLink at link time, and the build would fail).
#include <nvJitLink.h>


#include <chrono>
#include <memory>
#include <type_traits>
#include <vector>

namespace kjit::link {
namespace {

// The soname of the nvJitLink that matches the toolkit kjit was built with (13 for CUDA 13.x).
constexpr int k_major = CUDA_VERSION / 1000;

struct Api {
  decltype(&nvJitLinkCreate) create = nullptr;
  decltype(&nvJitLinkDestroy) destroy = nullptr;
  decltype(&nvJitLinkAddData) add_data = nullptr;
  decltype(&nvJitLinkComplete) complete = nullptr;
  decltype(&nvJitLinkGetLinkedCubinSize) cubin_size = nullptr;
  decltype(&nvJitLinkGetLinkedCubin) cubin = nullptr;
  decltype(&nvJitLinkGetErrorLogSize) error_log_size = nullptr;
  decltype(&nvJitLinkGetErrorLog) error_log = nullptr;
  decltype(&nvJitLinkGetInfoLogSize) info_log_size = nullptr;
  decltype(&nvJitLinkGetInfoLog) info_log = nullptr;
  decltype(&nvJitLinkVersion) version = nullptr;
  std::string error;  // why it could not be loaded; empty when loaded
};

const Api& api() {
  static const Api loaded = [] {
    Api a;
    const std::string soname = fmt::format("libnvJitLink.so.{}", k_major);
    // Its soname (LD_LIBRARY_PATH, the loader's cache), then beside the libnvrtc this process
    // loaded (the same toolkit), then the toolkit's other places.
    base::DynamicLibrary lib = base::DynamicLibrary::open_first(base::toolkit_library_candidates(soname));
    if (!lib) {
      a.error = fmt::format("loading nvJitLink {}: dlopen failed ({}); install the CUDA toolkit's nvJitLink or put "
                            "it on LD_LIBRARY_PATH", k_major, lib.why());
      return a;
    }
    auto resolve = [&](auto& fn, const char* name) { lib.resolve(fn, name); };
    resolve(a.create, "nvJitLinkCreate");
    resolve(a.destroy, "nvJitLinkDestroy");
    resolve(a.add_data, "nvJitLinkAddData");
    resolve(a.complete, "nvJitLinkComplete");
    resolve(a.cubin_size, "nvJitLinkGetLinkedCubinSize");
    resolve(a.cubin, "nvJitLinkGetLinkedCubin");
    resolve(a.error_log_size, "nvJitLinkGetErrorLogSize");
    resolve(a.error_log, "nvJitLinkGetErrorLog");
    resolve(a.info_log_size, "nvJitLinkGetInfoLogSize");
    resolve(a.info_log, "nvJitLinkGetInfoLog");
    resolve(a.version, "nvJitLinkVersion");
    if (!lib.missing().empty()) a.error = fmt::format("loading nvJitLink: {} lacks {}", soname, lib.missing());
    return a;
  }();
  if (!loaded.error.empty()) throw LinkError("", {}, "", loaded.error);
  return loaded;
}

nvJitLinkInputType input_type(Link::InputKind kind) {
  switch (kind) {
  case Link::InputKind::cubin: return NVJITLINK_INPUT_CUBIN;
  case Link::InputKind::ptx: return NVJITLINK_INPUT_PTX;
  case Link::InputKind::ltoir: return NVJITLINK_INPUT_LTOIR;
  case Link::InputKind::fatbin: return NVJITLINK_INPUT_FATBIN;
  case Link::InputKind::object: return NVJITLINK_INPUT_OBJECT;
  case Link::InputKind::library: return NVJITLINK_INPUT_LIBRARY;
  }
  return NVJITLINK_INPUT_ANY;
}

[[noreturn]] void fail(nvJitLinkResult r, const char* call) {
  throw LinkError("", {}, "", fmt::format("nvJitLink call {} failed with error {}", call, static_cast<int>(r)));
}

struct Destroy {
  const Api* a;
  void operator()(nvJitLinkHandle h) const { a->destroy(&h); }
};

std::string read_log(const Api& a, nvJitLinkHandle h, bool error) {
  std::size_t size = 0;
  if ((error ? a.error_log_size(h, &size) : a.info_log_size(h, &size)) != NVJITLINK_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if ((error ? a.error_log(h, log.data()) : a.info_log(h, log.data())) != NVJITLINK_SUCCESS) return {};
  std::erase(log, '\0');  // the terminating NUL, and any other: a log is text
  return log;
}

}  // namespace

LinkOutput NvJitLinker::link(const std::vector<LinkPart>& parts, const std::vector<std::string>& options) {
  const Api& a = api();
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  nvJitLinkHandle raw = nullptr;
  const auto start = std::chrono::steady_clock::now();
  if (auto r = a.create(&raw, static_cast<std::uint32_t>(argv.size()), argv.data()); r != NVJITLINK_SUCCESS) {
    LinkOutput out;  // an option nvJitLink does not know: its log says which
    out.error_log = raw ? read_log(a, raw, true) : std::string();
    if (raw) a.destroy(&raw);
    if (out.error_log.empty()) out.error_log = fmt::format("nvJitLinkCreate refused the options (error {})", static_cast<int>(r));
    return out;
  }
  std::unique_ptr<std::remove_pointer_t<nvJitLinkHandle>, Destroy> handle(raw, Destroy{&a});
  LinkOutput out;
  for (const auto& p : parts) {
    if (a.add_data(raw, input_type(p.kind), p.bytes.data(), p.bytes.size(), p.name.c_str()) != NVJITLINK_SUCCESS) {
      out.error_log = read_log(a, raw, true);
      if (out.error_log.empty()) out.error_log = fmt::format("nvJitLink refused input {} ({})", p.name, to_string(p.kind));
      out.info_log = read_log(a, raw, false);
      return out;
    }
  }
  const nvJitLinkResult done = a.complete(raw);
  out.link_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out.error_log = read_log(a, raw, true);
  out.info_log = read_log(a, raw, false);
  if (done != NVJITLINK_SUCCESS) {
    if (out.error_log.empty()) out.error_log = fmt::format("nvJitLinkComplete failed with error {}", static_cast<int>(done));
    return out;
  }
  std::size_t size = 0;
  if (auto r = a.cubin_size(raw, &size); r != NVJITLINK_SUCCESS) fail(r, "nvJitLinkGetLinkedCubinSize");
  out.cubin.resize(size);
  if (auto r = a.cubin(raw, out.cubin.data()); r != NVJITLINK_SUCCESS) fail(r, "nvJitLinkGetLinkedCubin");
  out.succeeded = true;
  return out;
}

std::string NvJitLinker::version() {
  const Api& a = api();
  unsigned major = 0, minor = 0;
  if (auto r = a.version(&major, &minor); r != NVJITLINK_SUCCESS) fail(r, "nvJitLinkVersion");
  return fmt::format("{}.{}", major, minor);
}

}  // namespace kjit::link
