// kjit's tools beside the core (<kjit/kjit.hpp>): what a program uses to inspect what the compiler
// made, measure and profile kernels, warm and tune ahead of time, read kernel manifests,
// administer a cache and write output files atomically. Same namespace (kjit); see
// ARCHITECTURE.md for which room implements each.
#pragma once

#include <kjit/kjit.hpp>

#include <kjit/tools/bench.hpp>
#include <kjit/tools/cache.hpp>
#include <kjit/tools/inspect.hpp>
#include <kjit/tools/manifest.hpp>
#include <kjit/tools/profile.hpp>
#include <kjit/tools/tune_ahead.hpp>
#include <kjit/tools/warm.hpp>
#include <kjit/tools/write_file.hpp>
