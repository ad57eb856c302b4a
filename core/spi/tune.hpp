// libkjit_tools' door into core/tune/ (see core/spi/system.hpp): a tuning decision's codec, text
// and figures, a spec's shapes and the arguments kjit tune makes up.
#pragma once

#include "core/tune/decision.hpp"
#include "core/tune/report.hpp"
#include "core/tune/synthetic_arguments.hpp"
