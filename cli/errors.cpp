#include "errors.hpp"

#include "context.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

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
  if (dynamic_cast<const CacheMissError*>(&e)) return "miss";
  return "internal";
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_text(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void print_json(const nlohmann::json& j, int indent) { fmt::print("{}\n", json_text(j, indent)); }

std::string json_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  const auto* p = reinterpret_cast<const unsigned char*>(name.data());
  const std::size_t n = name.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    // The length of a well-formed UTF-8 sequence starting here (RFC 3629), or 0.
    std::size_t len = 0;
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (ok && len == 3) {
      ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] > 0x9F);  // overlong, surrogates
    } else if (ok && len == 4) {
      ok = !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] > 0x8F);  // overlong, past U+10FFFF
    }
    if (ok) {
      out.append(name.substr(i, len));
      i += len;
    } else {
      out += fmt::format("\\x{:02X}", c);
      i += 1;
    }
  }
  return out;
}

std::vector<std::string> json_names(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(json_name(n));
  return out;
}

nlohmann::json error_json(const std::exception& e, std::string_view file) {
  nlohmann::json error{{"kind", error_kind(e)}, {"message", e.what()}};
  if (!file.empty()) error["file"] = json_name(file);
  if (const auto* compile = dynamic_cast<const CompileError*>(&e)) error["log"] = compile->log();
  if (const auto* usage = dynamic_cast<const UsageError*>(&e); usage && !usage->log().empty()) error["log"] = usage->log();
  if (const auto* link = dynamic_cast<const LinkError*>(&e)) {
    error["log"] = link->log();
    error["inputs"] = link->inputs();
  }
  if (const auto* miss = dynamic_cast<const CacheMissError*>(&e)) {
    error["key"] = miss->key();
    for (const auto& t : miss->tiers()) error["tiers"].push_back({{"tier", t.name}, {"why", t.why}});
  }
  return nlohmann::json{{"error", error}};
}

int exit_code_for(const std::exception& e) {
  const std::string kind = error_kind(e);
  if (kind == "usage") return k_exit_usage;
  if (kind == "compile" || kind == "link" || kind == "io" || kind == "load" || kind == "launch" || kind == "miss") {
    return k_exit_failed;
  }
  return k_exit_error;
}

}  // namespace kjit::cli
