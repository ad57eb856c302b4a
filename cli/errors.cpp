#include "errors.hpp"

#include "context.hpp"

#include <kjit/error.hpp>

namespace kjit::cli {

std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return "usage";
  if (dynamic_cast<const CompileError*>(&e)) return "compile";
  if (const auto* link = dynamic_cast<const LinkError*>(&e)) return link->log().empty() ? "nvjitlink" : "link";
  if (const auto* cuda = dynamic_cast<const CudaError*>(&e)) {
    const std::string& call = cuda->call();
    if (call.starts_with("cuModuleLoad") || call.starts_with("cuLibraryLoad")) return "load";
    if (call.starts_with("cuLaunch")) return "launch";
    return "cuda";
  }
  if (dynamic_cast<const NvrtcError*>(&e)) return "nvrtc";
  if (dynamic_cast<const DriverNotFoundError*>(&e)) return "driver";
  if (dynamic_cast<const UnavailableError*>(&e)) return "unavailable";
  if (dynamic_cast<const IoError*>(&e)) return "io";
  return "internal";
}

nlohmann::json error_json(const std::exception& e, std::string_view file) {
  nlohmann::json error{{"kind", error_kind(e)}, {"message", e.what()}};
  if (!file.empty()) error["file"] = std::string(file);
  if (const auto* compile = dynamic_cast<const CompileError*>(&e)) error["log"] = compile->log();
  if (const auto* usage = dynamic_cast<const UsageError*>(&e); usage && !usage->log().empty()) error["log"] = usage->log();
  if (const auto* link = dynamic_cast<const LinkError*>(&e)) {
    error["log"] = link->log();
    error["inputs"] = link->inputs();
  }
  return nlohmann::json{{"error", error}};
}

int exit_code_for(const std::exception& e) {
  const std::string kind = error_kind(e);
  if (kind == "usage") return k_exit_usage;
  if (kind == "compile" || kind == "link" || kind == "io" || kind == "load" || kind == "launch") return k_exit_failed;
  return k_exit_error;
}

}  // namespace kjit::cli
