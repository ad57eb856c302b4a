// kjit: run-time CUDA compilation with NVRTC, a crash-safe disk cache, and typed launches: the
// core. <kjit/tools.hpp> adds what a program uses to inspect, measure and manage.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/event.hpp>
#include <kjit/global.hpp>
#include <kjit/kernel.hpp>
#include <kjit/kernels.hpp>
#include <kjit/link.hpp>
#include <kjit/load_inline.hpp>
#include <kjit/loader.hpp>
#include <kjit/log.hpp>
#include <kjit/memory.hpp>
#include <kjit/module.hpp>
#include <kjit/parameters.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime.hpp>
#include <kjit/runtime_config.hpp>
#include <kjit/stream.hpp>
#include <kjit/tune.hpp>
