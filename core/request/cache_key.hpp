// kjit::request::CacheKey: the cache key of a compile request, from its inputs only: key-format
// version, kjit version, NVRTC version, target (arch and output kind), the canonical option
// list, the fast path's setting (KJIT_NVRTC_FAST: a program no process compiled with it is never
// served from one that did), the program's file name (its name after the last '/'), source, every in-memory header,
// the content of every user header reachable by #include, the name expressions, and the
// program's name as given where the output can hold it (__FILE__, __BASE_FILE__, assert or an
// _ASSERT macro in the source or a header; line info, -G, LTO-IR). Nothing else (not the cache
// path, not timestamps, not the environment): one file spelled `k.cu`, `./k.cu` or by its
// absolute path is one key. Never throws.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/link.hpp>
#include <kjit/program.hpp>

#include "core/cache/key.hpp"
#include "core/compile/nvrtc_compiler.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::request {

inline constexpr std::uint32_t k_key_format_version = 3;  // 3: the fast path's setting; extern "C" kernels' types

struct CacheKey {
  cache::Key key;
  std::vector<cache::KeyField> fields;  // for `kjit cache explain` (Fields::keep only)

  // `source_dir`: the directory of the program's file when it came from one (quoted includes
  // resolve there first), else empty.
  static CacheKey compute(const Program& program, const std::vector<std::string>& canonical_flags,
                          const Arch& resolved, const std::vector<std::filesystem::path>& include_dirs,
                          const std::filesystem::path& source_dir, compile::FastPath fast,
                          cache::Hasher::Fields fields = cache::Hasher::Fields::drop);

  // "k.cu" of "kernels/k.cu" (the name itself when it has no '/').
  static std::string_view file_name(std::string_view program_name);

  // The key of a link: key-format version, kjit and nvJitLink versions, target, nvJitLink's
  // options, the link's name, each program part by its own compile key (which covers its
  // source, headers, options and NVRTC), and each prebuilt part by kind, name and content.
  static CacheKey compute_link(const Link& link, const std::vector<std::string>& link_options, const Arch& resolved,
                               const std::vector<cache::Key>& program_keys, const std::string& nvjitlink_version,
                               cache::Hasher::Fields fields = cache::Hasher::Fields::drop);
};

}  // namespace kjit::request
