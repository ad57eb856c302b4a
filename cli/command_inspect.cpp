// kjit diff, resources, sass (filled in with the inspection library).
#include "commands.hpp"

namespace kjit::cli {

void add_inspect_commands(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

}  // namespace kjit::cli
