// kjit::Manifest: kernels_src/kjit.json, the list of kernel files of one folder with their
// compile options, template instantiations (name expressions) and variants. The source loader
// and `kjit warm` read it, and build each request through one function, so their cache keys
// are the same by construction. Manifest::read throws UsageError for a malformed manifest
// (the file and the JSON error's position, or the unknown key and where it is) and IoError
// when it cannot be read.
//
//   {
//     "kjit_manifest": 1,
//     "kernels": [
//       { "file": "square.cu",                                   (the only required key)
//         "options": {"std": "c++17", "defines": ["X=1"], "include_dirs": [], "fast_math": false,
//                     "line_info": false, "device_debug": false, "max_registers": 0,
//                     "nvcc_environment": true, "flags": []},
//         "instantiate": ["kjit::square<float>"],
//         "variants": [ {"name": "block128", "defines": ["BLOCK=128"]},
//                       {"name": "block256", "defines": ["BLOCK=256"], "instantiate": [...],
//                        "flags": [...]} ],
//         "tuning": [ {"name": "square",                          (a kjit::TuneSpec: tune.hpp)
//                      "candidates": [{"kernel": "square<1>", "block": 128},
//                                     {"kernel": "square<4>", "block": [256, 1, 1], "param": 4,
//                                      "defines": ["TILE=4"], "shared_mem": 0, "cluster": [1, 1, 1],
//                                      "label": "wide"}],
//                      "key": ["pow2(n)"],                       (shape variables: "n" or "pow2(n)")
//                      "grid": "ceil_div(n, block * param)",     (or up to 3: ["x", "y", "z"])
//                      "arguments": [{"name": "x", "type": "const float*", "count": "n"},
//                                    {"name": "y", "type": "float*", "count": "n", "output": "restore"},
//                                    {"name": "n", "type": "int", "value": "n"}],
//                      "shapes": [{"n": 1048576}, {"n": 16777216}] } ] } ] }
//
// A tuning entry is what KernelLoader::tuner<Sig>(file, name) tunes, and `kjit tune` decides its
// "shapes" ahead of time on the GPU at hand (with made-up arguments: "fill" random, zero or a
// number; "output" reset or restore, as in kjit::TuneBuffers).
//
// A variant overlays the kernel's options: the lists (defines, flags, include_dirs) and instantiate
// are appended, the scalars (std, fast_math, line_info, device_debug, max_registers,
// nvcc_environment) override. No "variants": one default variant named "". include_dirs are
// relative to the manifest's folder, and become the program's include path (searched as
// CompileOptions::include_dirs are, keyed by the headers' content, not their folders).
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/tune.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// Options as the manifest spells them: each key (a field of compile_option_fields() with a
// manifest name: docs/compile-options.md) read into its field of `values`; `given` names the
// fields the manifest gave, the others keep the defaults (or the kernel's, for a variant).
struct KJIT_API ManifestOptions {
  CompileOptions values;  // include_dirs absolute (resolved against the manifest's folder)
  std::vector<std::string> given;

  bool has(std::string_view field) const;
};

struct ManifestVariant {
  std::string name;               // "" for the default variant of a kernel without "variants"
  ManifestOptions options;        // the variant's own keys, not yet overlaid
  std::vector<std::string> instantiate;
};

struct ManifestKernel {
  std::string file;               // relative to the manifest's folder ("softmax.cu", "nn/gelu.cu")
  ManifestOptions options;
  std::vector<std::string> instantiate;
  std::vector<ManifestVariant> variants;  // never empty after reading: {""} when none were listed
  std::vector<TuneSpec> tuning;           // its "tuning" entries, checked when read

  // The tuning entry named `name`; throws UsageError naming the kernel and listing the known.
  const TuneSpec& tuning_spec(std::string_view name) const;

  // The variant a lookup means: `name` empty is the first (the default); otherwise the one
  // named. Throws UsageError naming the kernel and listing the known variants.
  const ManifestVariant& variant(std::string_view name) const;
  std::vector<std::string> variant_names() const;
  // The kernel's options with the variant overlaid, on top of `base` (whose arch is kept).
  CompileOptions options_for(const ManifestVariant& variant, const CompileOptions& base = {}) const;
  std::vector<std::string> name_expressions_for(const ManifestVariant& variant) const;
};

class KJIT_API Manifest {
public:
  static constexpr std::string_view k_file_name = "kjit.json";

  // Reads `path` (a kjit.json, or a folder holding one).
  static Manifest read(const std::filesystem::path& path);
  // Parses `text`; `path` is where it came from (for messages and relative include dirs).
  static Manifest parse(std::string_view text, const std::filesystem::path& path);

  const std::filesystem::path& path() const noexcept { return m_path; }
  std::filesystem::path dir() const { return m_path.parent_path(); }
  const std::vector<ManifestKernel>& kernels() const noexcept { return m_kernels; }
  // The entry for `file` (relative to dir(), as written in the manifest), or null.
  const ManifestKernel* find(std::string_view file) const;

private:
  std::filesystem::path m_path;
  std::vector<ManifestKernel> m_kernels;
};

}  // namespace kjit
