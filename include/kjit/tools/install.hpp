// kjit::install_tools: plugs libkjit_tools into the core's interfaces, so that a program linking
// the tools gets what the environment asks of them: KJIT_DUMP_DIR's dumps (the core's dump
// writer, set_dump_writer) and KJIT_TUNE_METRICS's figures (the tuner's explainer,
// set_tune_explainer). Call it once, first (before Runtime::global() is used); calling it again
// changes nothing. The kjit CLI and the Python package call it.
#pragma once

#include <kjit/export.hpp>

namespace kjit {

KJIT_API void install_tools();

}  // namespace kjit
