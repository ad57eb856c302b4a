// libkjit_tools (kjit::tools in CMake), beside the core (<kjit/kjit.hpp>): what a program uses to
// inspect what the compiler made, profile kernels, warm and tune ahead of time, administer a cache
// and write output files atomically; install_tools() plugs the tools into the core (dumps, the
// tuner's figures). Same namespace (kjit); layers.json names the room that implements each.
#pragma once

#include <kjit/kjit.hpp>

#include <kjit/tools/cache.hpp>
#include <kjit/tools/inspect.hpp>
#include <kjit/tools/closest_names.hpp>
#include <kjit/tools/install.hpp>
#include <kjit/tools/profile.hpp>
#include <kjit/tools/shard.hpp>
#include <kjit/tools/tune_ahead.hpp>
#include <kjit/tools/warm.hpp>
#include <kjit/tools/write_file.hpp>
