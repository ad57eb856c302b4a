// write_dump: everything one compile produced, in one folder per program and key.
#include "core/spi/system.hpp"
#include "tools/inspect/dump_hook.hpp"
#include "tools/inspect/inspect_json.hpp"

#include <kjit/error.hpp>
#include <kjit/tools/inspect.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>


namespace kjit::inspect {

namespace {

std::string sanitize(std::string_view name, std::string_view fallback) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    out += ok ? c : '_';
  }
  while (!out.empty() && out.front() == '.') out.erase(out.begin());
  if (out.size() > 64) out.resize(64);
  return out.empty() ? std::string(fallback) : out;
}

// Each file whole or not at all (a tool may read the folder while kjit writes it); not fsynced: a
// dump is a debugging copy that the next compile makes again.
void write_file(const std::filesystem::path& path, std::string_view content, std::string_view program) {
  if (auto written = system::write_file_atomically(path, content, system::AtomicFile::Sync::no); !written) {
    throw IoError(fmt::format("writing a dump file for program {}: {}", program, written.error().message));
  }
}

std::string lines(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += s + '\n';
  return out;
}

}  // namespace

std::string dump_folder_name(const Program& program, const CompileResult& result) {
  const std::string key = result.key.empty() ? std::string("nokey") : result.key.substr(0, 16);
  return fmt::format("{}-{}", sanitize(program.name(), "program"), sanitize(key, "nokey"));
}

std::filesystem::path write_dump(const std::filesystem::path& dump_root, const Program& program,
                                 const CompileResult& result, DumpSass dump_sass) {
  const std::filesystem::path dir = dump_root / dump_folder_name(program, result);
  const std::string& name = program.name();
  std::error_code ec;
  std::filesystem::create_directories(dir / "headers", ec);
  if (ec) throw IoError(fmt::format("creating dump folder {} for program {}: {}", dir.string(), name, ec.message()));

  write_file(dir / "source.cu", program.source(), name);
  std::string header_list;
  for (std::size_t i = 0; i < program.headers().size(); ++i) {
    const auto& [header_name, content] = program.headers()[i];
    const std::string file = fmt::format("{}-{}", i, sanitize(header_name, "header"));
    write_file(dir / "headers" / file, content, name);
    header_list += fmt::format("{}\theaders/{}\n", header_name, file);
  }
  write_file(dir / "headers.txt", header_list, name);
  write_file(dir / "options.txt", lines(result.options), name);
  write_file(dir / "kernel.ptx", result.ptx, name);
  if (result.has_cubin()) write_file(dir / "kernel.cubin", result.cubin, name);
  write_file(dir / "compile.log", result.log, name);
  std::string lowered;
  for (const auto& [expression, mangled] : result.lowered_names) lowered += fmt::format("{}\t{}\n", expression, mangled);
  write_file(dir / "lowered_names.txt", lowered, name);

  const std::vector<ResourceUsage> usage = usage_from_result(result);  // as `kjit resources`, without the driver
  if (usage.empty()) {
    write_file(dir / "resources.txt",
               "The compile log holds no ptxas resource report. Compile with -Xptxas=-v (and a real arch such as "
               "sm_90) to get one, or run `kjit resources`.\n",
               name);
  } else {
    write_file(dir / "resources.txt", resources_table(usage), name);
    write_file(dir / "resources.json", resources_json(usage), name);
  }

  nlohmann::json info{{"program", name},
                      {"arch", result.arch.str()},
                      {"key", result.key},
                      {"outcome", std::string(to_string(result.outcome))},
                      {"compile_ms", result.compile_ms},
                      {"options", result.options},
                      {"name_expressions", program.name_expressions()},
                      {"kernels", parse_ptx(result.ptx).kernel_names()}};
  write_file(dir / "info.json", info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", name);

  std::filesystem::remove(dir / "sass-unavailable.txt", ec);
  if (dump_sass == DumpSass::if_available) {
    std::string reason;
    if (!result.has_cubin()) {
      reason = fmt::format("No SASS: the result for {} has no cubin (virtual arch: PTX only).\n", result.arch.str());
    } else if (!find_disassembler()) {
      reason = disassembler_unavailable_reason() + "\n";
    } else {
      try {
        write_file(dir / "kernel.sass", sass(result.cubin), name);
      } catch (const Error& e) {
        reason = fmt::format("No SASS: {}\n", e.what());
      }
    }
    if (!reason.empty()) write_file(dir / "sass-unavailable.txt", reason, name);
  }
  return dir;
}

std::function<void(const Program&, const CompileResult&)> dump_hook(std::filesystem::path dir, bool dump_hits,
                                                                    DumpLog log) {
  // Only compiles are dumped unless `dump_hits`: the first hit says so, once, so that an empty
  // dump folder is explained.
  auto hit_said = std::make_shared<std::atomic<bool>>(false);
  return [dir = std::move(dir), dump_hits, log = std::move(log), hit_said](const Program& program,
                                                                           const CompileResult& result) {
    if ((result.outcome == Outcome::hit || result.outcome == Outcome::remote_hit) && !dump_hits) {
      if (!hit_said->exchange(true, std::memory_order_relaxed)) {
        log(LogLevel::warn,
            fmt::format("KJIT_DUMP_DIR {}: program {} came from the cache and is not dumped (only compiles are); "
                        "KJIT_ALWAYS_COMPILE=1 compiles, and dumps, every request",
                        dir.string(), program.name()));
      }
      return;
    }
    try {
      auto folder = write_dump(dir, program, result);
      log(LogLevel::info, fmt::format("dumped program {} to {}", program.name(), folder.string()));
    } catch (const std::exception& e) {
      log(LogLevel::warn, fmt::format("dumping program {} into {}: {}", program.name(), dir.string(), e.what()));
    }
  };
}

}  // namespace kjit::inspect
