#include "core/request/entry_codec.hpp"

#include "core/compile/nvrtc/nvrtc_info.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

namespace kjit::request {
namespace {

std::string encode_lowered_names(const std::vector<std::pair<std::string, std::string>>& names) {
  std::string out;
  for (const auto& [expr, mangled] : names) {
    out += expr;
    out.push_back('\0');
    out += mangled;
    out.push_back('\0');
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> decode_lowered_names(std::string_view bytes) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    std::size_t a = bytes.find('\0', pos);
    if (a == std::string_view::npos) break;
    std::size_t b = bytes.find('\0', a + 1);
    if (b == std::string_view::npos) break;
    out.emplace_back(std::string(bytes.substr(pos, a - pos)), std::string(bytes.substr(a + 1, b - a - 1)));
    pos = b + 1;
  }
  return out;
}

}  // namespace

cache::Entry to_entry(const CompileResult& r) {
  cache::Entry e;
  if (r.has_cubin()) e.set(cache::SectionKind::cubin, r.cubin);
  if (!r.ltoir.empty()) e.set(cache::SectionKind::ltoir, r.ltoir);
  e.set(cache::SectionKind::ptx, r.ptx);
  e.set(cache::SectionKind::log, r.log);
  e.set(cache::SectionKind::lowered_names, encode_lowered_names(r.lowered_names));
  if (!r.kernel_types.empty()) e.set(cache::SectionKind::kernel_types, encode_lowered_names(r.kernel_types));
  std::vector<std::string> expressions;  // the name expressions, which tell entries apart too (cache ls)
  for (const auto& [expression, lowered] : r.lowered_names) expressions.push_back(expression);
  e.set(cache::SectionKind::meta,
        nlohmann::json{{"program", r.program_name},
                       {"arch", r.arch.str()},
                       {"options", r.options},  // what `kjit cache ls` tells one file's entries apart by
                       {"instantiate", expressions},
                       {"kjit", KJIT_VERSION},
                       {"nvrtc", compile::NvrtcInfo::version()}}
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return e;
}

namespace {

// One entry serves every spelling of a file's name that its output cannot hold (request/cache_key):
// a log kept from another spelling names the program as this request does ("k.cu(3): warning"
// for "./k.cu(3): warning"). Only a hit with a log reads the meta section.
void respell_log(std::string& log, std::string_view meta, const std::string& program_name) {
  const nlohmann::json j = nlohmann::json::parse(meta.begin(), meta.end(), nullptr, false);
  if (!j.is_object()) return;
  const auto stored = j.find("program");
  if (stored == j.end() || !stored->is_string()) return;
  const std::string from = stored->get<std::string>() + "(";
  if (from.size() == 1 || from == program_name + "(") return;
  std::string out;
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t end = log.find('\n', pos);
    end = end == std::string::npos ? log.size() : end + 1;
    const std::string_view line(log.data() + pos, end - pos);
    if (line.starts_with(from)) {
      out += program_name;
      out += line.substr(from.size() - 1);
    } else {
      out += line;
    }
    pos = end;
  }
  log = std::move(out);
}

// The small sections of a checked entry into `r`; returns the cubin's section, or null.
const cache::SectionRef* decode(std::string_view bytes, const std::vector<cache::SectionRef>& sections,
                                CompileResult& r) {
  std::string_view meta;
  const cache::SectionRef* cubin = nullptr;
  bool seen[9] = {};
  for (const cache::SectionRef& s : sections) {
    auto k = static_cast<std::size_t>(s.kind);
    if (k >= 9 || seen[k]) continue;
    seen[k] = true;
    const std::string_view view = bytes.substr(s.offset, s.size);
    switch (s.kind) {
    case cache::SectionKind::ptx: r.ptx = view; break;
    case cache::SectionKind::cubin: cubin = &s; break;
    case cache::SectionKind::log: r.log = view; break;
    case cache::SectionKind::lowered_names: r.lowered_names = decode_lowered_names(view); break;
    case cache::SectionKind::kernel_types: r.kernel_types = decode_lowered_names(view); break;
    case cache::SectionKind::ltoir: r.ltoir = view; break;
    case cache::SectionKind::meta: meta = view; break;
    case cache::SectionKind::tuning: break;
    }
  }
  if (!r.log.empty()) respell_log(r.log, meta, r.program_name);
  return cubin;
}

CompileResult start(std::string program_name, const Arch& arch, std::vector<std::string> flags) {
  CompileResult r;
  r.program_name = std::move(program_name);
  r.arch = arch;
  r.options = std::move(flags);
  return r;
}

}  // namespace

CompileResult from_entry(cache::GetResult&& g, std::string program_name, const Arch& arch,
                         std::vector<std::string> flags, const cache::Key& key) {
  CompileResult r = start(std::move(program_name), arch, std::move(flags));
  const cache::SectionRef* cubin = decode(g.bytes, g.sections, r);
  if (cubin != nullptr) {
    std::string image = std::move(g.bytes);
    std::memmove(image.data(), image.data() + cubin->offset, cubin->size);
    image.resize(cubin->size);
    // A cubin much smaller than its entry (a large PTX beside it) gets a buffer of its own.
    if (image.capacity() > 2 * image.size() + 65536) image.shrink_to_fit();
    r.cubin = std::move(image);
  }
  r.key = key.hex();
  r.outcome = Outcome::hit;
  return r;
}

CompileResult from_entry_copy(std::string_view bytes, const std::vector<cache::SectionRef>& sections,
                              std::string program_name, const Arch& arch, std::vector<std::string> flags,
                              const cache::Key& key) {
  CompileResult r = start(std::move(program_name), arch, std::move(flags));
  if (const cache::SectionRef* cubin = decode(bytes, sections, r)) r.cubin = bytes.substr(cubin->offset, cubin->size);
  r.key = key.hex();
  r.outcome = Outcome::hit;
  return r;
}

}  // namespace kjit::request
