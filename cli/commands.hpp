// Every command group of the kjit tool; main.cpp calls each.
#pragma once

#include "context.hpp"
#include "errors.hpp"

#include <CLI/CLI.hpp>

namespace kjit::cli {

void add_info_command(CLI::App& app, Context& ctx);
void add_compile_commands(CLI::App& app, Context& ctx);  // compile, ptx
void add_cache_commands(CLI::App& app, Context& ctx);    // cache stats|ls|verify|prune|clear|explain
void add_inspect_commands(CLI::App& app, Context& ctx);  // diff, resources, sass
void add_warm_command(CLI::App& app, Context& ctx);      // warm
void add_profile_command(CLI::App& app, Context& ctx);   // profile
void add_tune_command(CLI::App& app, Context& ctx);      // tune

}  // namespace kjit::cli
