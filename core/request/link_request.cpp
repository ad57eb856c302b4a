#include "core/request/link_request.hpp"

#include <kjit/error.hpp>

#include "core/system/at_fork.hpp"
#include "core/compile/nvrtc_compiler.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/link/nvjitlink_linker.hpp"
#include "core/trace/nvtx.hpp"
#include "core/trace/phase.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/base/toolkit_location.hpp"
#include "core/system/file_io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace kjit::request {
namespace {

// "program a.cu", "cubin lib.cubin (4096 bytes)": how errors and dumps name a link's parts.
std::vector<std::string> part_names(const Link& link) {
  std::vector<std::string> out;
  for (const auto& p : link.programs()) out.push_back(fmt::format("program {}", p.name()));
  for (const auto& in : link.inputs()) out.push_back(fmt::format("{} {} ({} bytes)", to_string(in.kind), in.name, in.bytes.size()));
  return out;
}

// A part whose code launches kernels from the device (dynamic parallelism): its PTX calls the
// device runtime's entry points (__cudaCDP2GetParameterBufferV2, cudaLaunchDeviceV2, ...).
bool launches_from_device(const CompileResult& r) {
  return r.ptx.find("__cudaCDP") != std::string::npos || r.ptx.find(" cudaLaunchDevice") != std::string::npos ||
         r.ptx.find(" cudaGetParameterBuffer") != std::string::npos;
}

bool is_device_runtime(std::string_view name) {
  return std::filesystem::path(name).filename().string().starts_with("libcudadevrt");
}

// The toolkit's libcudadevrt.a: the first of its library folders that holds it, or nullopt.
std::optional<std::filesystem::path> device_runtime_library(std::vector<std::string>& looked) {
  for (const auto& root : base::toolkit_roots()) {
    for (const char* folder : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
      const std::filesystem::path file = root / folder / "libcudadevrt.a";
      std::error_code ec;
      if (std::filesystem::is_regular_file(file, ec)) return file;
      looked.push_back(file.string());
    }
  }
  return std::nullopt;
}

}  // namespace

PreparedLink PreparedLink::make(const Link& link, const compile::NormalizedOptions& options, const Arch& arch,
                                compile::FastPath fast, cache::Hasher::Fields fields) {
  if (!arch.is_real()) {
    throw UsageError(fmt::format("linking {}: nvJitLink makes a cubin for a real arch, and {} is virtual (use sm_XX)",
                                 link.name(), arch.str()));
  }
  if (link.programs().empty() && link.inputs().empty()) {
    throw UsageError(fmt::format("linking {}: the link has no inputs (add programs or device code files)", link.name()));
  }
  PreparedLink out;
  const compile::NormalizedOptions part_options = options.relocatable(link.lto());
  std::vector<cache::Key> keys;
  for (const Program& p : link.programs()) {
    out.parts.push_back(PreparedRequest::make(p, part_options, arch, fast));
    keys.push_back(out.parts.back().key.key);
  }
  out.options.push_back("-arch=" + arch.str());
  if (link.lto()) out.options.emplace_back("-lto");
  for (const auto& o : link.options()) {
    if (o.starts_with("-arch") || o == "-lto") continue;  // kjit sets them
    out.options.push_back(o);
  }
  out.request.flags = out.options;
  // nvJitLink's version is taken to be the toolkit's (NVRTC's): asking libnvJitLink means loading
  // it, which costs milliseconds, more than a whole disk hit. A link made by an nvJitLink of
  // another version is not cached (link() checks).
  out.request.key = CacheKey::compute_link(link, out.options, arch, keys, compile::NvrtcInfo::version(), fields);
  out.description = Program(link.name(), fmt::format("// nvJitLink link of:\n// {}\n", fmt::join(part_names(link), "\n// ")));
  return out;
}

CompileResult link(CompileService& service, const Link& link, const Arch& arch, const PreparedLink& prepared) {
  auto produce = [&](bool& keep) -> CompileResult {
    // The parts first: each a cached request of its own.
    std::vector<CompileResult> compiled;
    compiled.reserve(link.programs().size());
    for (std::size_t i = 0; i < link.programs().size(); ++i) {
      compiled.push_back(service.get(link.programs()[i], arch, prepared.parts[i]));
    }
    std::vector<link::LinkPart> parts;
    for (std::size_t i = 0; i < compiled.size(); ++i) {
      const CompileResult& r = compiled[i];
      const std::string& name = link.programs()[i].name();
      if (link.lto()) {
        parts.push_back({Link::InputKind::ltoir, name, r.ltoir});
      } else if (r.has_cubin()) {
        parts.push_back({Link::InputKind::cubin, name, r.cubin});
      } else {
        parts.push_back({Link::InputKind::ptx, name, r.ptx});
      }
    }
    for (const auto& in : link.inputs()) parts.push_back({in.kind, in.name, in.bytes});
    // A program that launches kernels from the device needs the device runtime: the toolkit's
    // libcudadevrt.a is added, as CuPy does, unless the link has it (the same inputs always add the
    // same library: the key, which names the toolkit's version, stays the inputs').
    std::string device_runtime_note;
    std::string device_runtime;  // its bytes, which the part below points to (LinkPart owns none)
    const auto launcher = std::find_if(compiled.begin(), compiled.end(), launches_from_device);
    const bool has_runtime = std::any_of(link.inputs().begin(), link.inputs().end(),
                                         [](const Link::Input& in) { return is_device_runtime(in.name); });
    if (launcher != compiled.end() && !has_runtime) {
      const std::string& program = link.programs()[static_cast<std::size_t>(launcher - compiled.begin())].name();
      std::vector<std::string> looked;
      const std::optional<std::filesystem::path> devrt = device_runtime_library(looked);
      if (!devrt) {
        throw LinkError(link.name(), part_names(link), "",
                        fmt::format("linking {}: program {} launches kernels from the device, which needs the CUDA "
                                    "device runtime (libcudadevrt.a), and the toolkit has none where kjit looked ({}): "
                                    "add it to the link (Link::add_file, kjit compile --link ... libcudadevrt.a) or "
                                    "name the toolkit with KJIT_CUDA_HOME",
                                    link.name(), program, fmt::join(looked, ", ")));
      }
      system::FileContent content = system::read_file(*devrt);
      if (!content.ok()) {
        throw IoError(fmt::format("linking {}: reading the device runtime for program {}: {}", link.name(), program,
                                  content.why()));
      }
      device_runtime = std::move(content.bytes);
      parts.push_back({Link::InputKind::library, devrt->string(), device_runtime});
      device_runtime_note = fmt::format("added the device runtime {} (program {} launches kernels from the device)",
                                        devrt->string(), program);
      service.log(LogLevel::info, fmt::format("linking {}: {}", link.name(), device_runtime_note));
    }

    trace::nvtx::Range range("link", link.name());
    trace::PhaseScope phase;
    link::LinkOutput out = [&] {
      const system::AtFork::Busy busy;  // a fork waits for nvJitLink (opened and run here)
      return link::NvJitLinker::link(parts, prepared.options);
    }();
    phase.end(trace::Phase::link, link.name());
    if (!out.succeeded) {
      const auto names = part_names(link);
      // The device runtime's entry points undefined: a part launches kernels from the device
      // (prebuilt code kjit does not read, or a library that is not libcudadevrt).
      const bool runtime_missing = out.error_log.find("__cudaCDP") != std::string::npos ||
                                   out.error_log.find("cudaGetParameterBuffer") != std::string::npos ||
                                   out.error_log.find("cudaLaunchDevice") != std::string::npos;
      throw LinkError(link.name(), names, out.error_log,
                      fmt::format("linking {} for {} with nvJitLink {} ({}) failed:\n{}\ninputs: {}{}{}", link.name(),
                                  arch.str(), link::NvJitLinker::version(), fmt::join(prepared.options, " "),
                                  out.error_log, fmt::join(names, ", "),
                                  device_runtime_note.empty() ? "" : "; " + device_runtime_note,
                                  runtime_missing && device_runtime_note.empty()
                                      ? "\nkjit: an input launches kernels from the device, and those names are the "
                                        "CUDA device runtime's: add the toolkit's libcudadevrt.a to the link "
                                        "(Link::add_file, kjit compile --link ... libcudadevrt.a)"
                                      : ""));
    }
    if (const std::string v = link::NvJitLinker::version(); v != compile::NvrtcInfo::version()) {
      keep = false;
      service.log(LogLevel::info, fmt::format("linked {} with nvJitLink {}, NVRTC is {}: the result is not cached (its "
                                              "key names the toolkit's version)", link.name(), v,
                                              compile::NvrtcInfo::version()));
    }
    CompileResult result;
    result.program_name = link.name();
    result.arch = arch;
    result.options = prepared.options;
    result.cubin = std::move(out.cubin);
    result.log = std::move(out.info_log);
    for (const CompileResult& r : compiled) {
      result.lowered_names.insert(result.lowered_names.end(), r.lowered_names.begin(), r.lowered_names.end());
    }
    result.compile_ms = out.link_ms;
    return result;
  };
  return service.get(prepared.description, arch, prepared.request, produce);
}

}  // namespace kjit::request
