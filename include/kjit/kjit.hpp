// kjit: run-time CUDA compilation with NVRTC, a crash-safe disk cache, and typed launches.
#pragma once

#include <kjit/cache.hpp>
#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/global.hpp>
#include <kjit/kernel.hpp>
#include <kjit/link.hpp>
#include <kjit/load_inline.hpp>
#include <kjit/loader.hpp>
#include <kjit/log.hpp>
#include <kjit/manifest.hpp>
#include <kjit/module.hpp>
#include <kjit/profile.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime.hpp>
#include <kjit/tune.hpp>
#include <kjit/tune_ahead.hpp>
#include <kjit/warm.hpp>
