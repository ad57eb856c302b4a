// kjit cache stats | ls | verify | prune | clear | explain.
#include "commands.hpp"

namespace kjit::cli {

void add_cache_commands(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace kjit::cli
