// kjit: run-time CUDA compilation with NVRTC, a crash-safe disk cache, and typed launches: what
// every program of libkjit uses (compile, link, load, launch, devices and memory). The rest of the
// core comes by its own header: <kjit/tune.hpp> (the tuner), <kjit/loader.hpp> (kernel files and
// their manifests, <kjit/manifest.hpp>), <kjit/kernels.hpp> (the shipped kernels),
// <kjit/parameters.hpp> (arguments typed at run time), <kjit/bench.hpp> (timing). The tools
// (libkjit_tools, <kjit/tools.hpp>) inspect, profile, warm and administer.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/event.hpp>
#include <kjit/global.hpp>
#include <kjit/kernel.hpp>
#include <kjit/link.hpp>
#include <kjit/load_inline.hpp>
#include <kjit/log.hpp>
#include <kjit/memory.hpp>
#include <kjit/module.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime.hpp>
#include <kjit/runtime_config.hpp>
#include <kjit/stream.hpp>
