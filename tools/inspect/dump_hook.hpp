// kjit::inspect::dump_hook: KJIT_DUMP_DIR as the compile service's result hook. install_tools()
// (tools/install.cpp) makes it the core's dump writer; request/ only calls its hook.
#pragma once

#include <kjit/compile_result.hpp>
#include <kjit/log.hpp>
#include <kjit/program.hpp>

#include <filesystem>
#include <functional>
#include <string_view>

namespace kjit::inspect {

// The folder name write_dump uses under its root: the program's name and the key's start.
std::string dump_folder_name(const Program& program, const CompileResult& result);

using DumpLog = std::function<void(LogLevel, std::string_view)>;
// Writes a folder per compile (and per disk or remote hit when `dump_hits`) under `dir`
// (write_dump); a failure is logged, never thrown.
std::function<void(const Program&, const CompileResult&)> dump_hook(std::filesystem::path dir, bool dump_hits,
                                                                    DumpLog log);

}  // namespace kjit::inspect
