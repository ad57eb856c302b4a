// compile::k_option_fields: the one table of CompileOptions' fields. Each field flipped in turn
// (to its row's example) reaches the request hash, the cache key, normalization's flags and the
// manifest; the docs and `kjit compile --help` show the table; the ranges are one.
#include <kjit/compile_options.hpp>
#include <kjit/error.hpp>
#include <kjit/manifest.hpp>
#include <kjit/runtime.hpp>

#include "core/compile/options/option_fields.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/request/request_hash.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using kjit::CompileOptionField;
using kjit::CompileOptionKind;
using kjit::CompileOptions;

const char* k_source = R"(
extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

// The row's example as a value of its kind.
kjit::CompileOptionValue example_value(const CompileOptionField& row) {
  const std::string e(row.example);
  switch (row.kind) {
  case CompileOptionKind::flag: return e == "true";
  case CompileOptionKind::count: return std::stoi(e);
  case CompileOptionKind::arch:
  case CompileOptionKind::text: return e;
  default: return std::vector<std::string>{e};
  }
}

// The row's example as a manifest writes it.
nlohmann::json example_json(const CompileOptionField& row) {
  const std::string e(row.example);
  switch (row.kind) {
  case CompileOptionKind::flag: return e == "true";
  case CompileOptionKind::count: return std::stoi(e);
  case CompileOptionKind::arch:
  case CompileOptionKind::text: return e;
  default: return nlohmann::json::array({e});
  }
}

// The options with one field flipped to its row's example (on an sm_90 base, so the key needs no GPU).
CompileOptions flipped(const CompileOptionField& row) {
  CompileOptions o{.arch = kjit::Arch::sm(90)};
  kjit::set_compile_option(o, row.name, example_value(row));
  return o;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// docs/compile-options.md's row for a field, as the page writes it.
std::string doc_row(const CompileOptionField& f) {
  std::vector<std::string> spellings;
  if (!f.cli.empty()) spellings.emplace_back(f.cli);
  for (std::string_view r : f.raw_flags) {
    if (!r.empty()) spellings.emplace_back(r);
  }
  if (!f.raw_prefix.empty()) spellings.push_back(std::string(f.raw_prefix) + "VALUE");
  std::vector<std::string> quoted;
  for (const auto& s : spellings) quoted.push_back("`" + s + "`");
  std::string flags = fmt::format("{}", fmt::join(quoted, ", "));
  if (f.kind == CompileOptionKind::raw_flags) flags = "any NVRTC or nvcc flag";
  if (flags.empty()) flags = "—";
  return fmt::format("| `{}` | {} | {} | {} | {} | {}{} |", f.name, kjit::to_string(f.kind),
                     f.nvrtc.empty() ? std::string("each flag as given") : fmt::format("`{}`", f.nvrtc),
                     f.manifest.empty() ? std::string("—") : fmt::format("`{}`", f.manifest), flags, f.doc,
                     f.kind == CompileOptionKind::count ? fmt::format(" ({} to {})", f.min, f.max) : "");
}

}  // namespace

TEST_SUITE("CompileOptionFields") {
  TEST_CASE("option fields: one row a member of CompileOptions each named once and each example unlike the default") {
    const auto rows = kjit::compile_option_fields();
    CHECK(rows.size() == kjit::compile::detail::member_count<CompileOptions>());
    std::set<std::string_view> names;
    for (const auto& row : rows) {
      INFO(row.name);
      CHECK(names.insert(row.name).second);
      CHECK(kjit::find_compile_option(row.name) == &row);
      CHECK_FALSE(row.doc.empty());
      CHECK_FALSE(row.example.empty());
      CHECK(kjit::compile_option(flipped(row), row.name) != kjit::compile_option(CompileOptions{.arch = kjit::Arch::sm(90)}, row.name));
    }
    CHECK(kjit::find_compile_option("fastmath") == nullptr);
  }

  TEST_CASE("option fields: each field flipped changes the request hash and the cache key") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const kjit::Program program("scale.cu", k_source);
    const CompileOptions base{.arch = kjit::Arch::sm(90)};
    const auto base_hash = kjit::request::request_hash(program, base, 0);
    const std::string base_key = rt.explain(program, base).key;
    std::set<std::string> keys{base_key};
    for (const auto& row : kjit::compile_option_fields()) {
      INFO(row.name);
      const CompileOptions o = flipped(row);
      CHECK_FALSE(kjit::request::request_hash(program, o, 0) == base_hash);
      CHECK(kjit::request::request_hash(program, o, 0) == kjit::request::request_hash(program, flipped(row), 0));
      const std::string key = rt.explain(program, o).key;
      CHECK(keys.insert(key).second);  // unlike the default's and every other field's
    }
  }

  TEST_CASE("option fields: nvcc_environment off is another request than on: one Runtime cannot hand back the first") {
    // load(p, {}) then load(p, {.nvcc_environment = false}) on one Runtime: the registry is keyed by
    // request_hash, which once left the field out (the GPU test loads both: gpu/compile_options).
    const kjit::Program program("pi.cu", "extern \"C\" __global__ void pi(float* x) { x[0] = M_PI; }");
    const auto on = kjit::request::request_hash(program, CompileOptions{}, 0);
    const auto off = kjit::request::request_hash(program, CompileOptions{.nvcc_environment = false}, 0);
    CHECK_FALSE(on == off);
    CHECK(kjit::canonical_flags(CompileOptions{}, kjit::Arch::sm(90)) !=
          kjit::canonical_flags(CompileOptions{.nvcc_environment = false}, kjit::Arch::sm(90)));
  }

  TEST_CASE("option fields: each field's flags fold into it as its typed value does") {
    for (const auto& row : kjit::compile_option_fields()) {
      if (row.kind == CompileOptionKind::raw_flags) continue;
      const CompileOptions typed = kjit::normalized(flipped(row));
      for (std::string_view name : row.raw_flags) {
        if (name.empty() || name == "-code" || name == "--gpu-code" || name == "-gencode" || name == "--generate-code") {
          continue;  // these take code=/arch= values (test_options_nvcc_flags.cpp)
        }
        std::vector<std::vector<std::string>> spellings;
        if (row.kind == CompileOptionKind::flag) {
          spellings.push_back({std::string(name)});
        } else {
          spellings.push_back({fmt::format("{}={}", name, row.example)});
          spellings.push_back({std::string(name), std::string(row.example)});
        }
        if (!row.raw_prefix.empty()) spellings.push_back({std::string(row.raw_prefix) + std::string(row.example)});
        for (const auto& flags : spellings) {
          INFO(row.name << ": " << fmt::format("{}", fmt::join(flags, " ")));
          CompileOptions raw{.arch = row.kind == CompileOptionKind::arch ? kjit::Arch::native() : kjit::Arch::sm(90),
                             .flags = flags};
          const CompileOptions folded = kjit::normalized(raw);
          CHECK(kjit::compile_option(folded, row.name) == kjit::compile_option(typed, row.name));
          CHECK(kjit::canonical_flags(raw, folded.arch) == kjit::canonical_flags(typed, typed.arch));
        }
      }
    }
  }

  TEST_CASE("option fields: a manifest reads every field with a key into options_for and a variant overrides it") {
    for (const auto& row : kjit::compile_option_fields()) {
      INFO(row.name);
      if (row.manifest.empty()) {
        CHECK(row.kind == CompileOptionKind::arch);  // chosen by the loader or kjit warm --arch
        continue;
      }
      nlohmann::json doc = {{"kjit_manifest", 1},
                            {"kernels", nlohmann::json::array({{{"file", "k.cu"},
                                                                {"options", {{std::string(row.manifest), example_json(row)}}},
                                                                {"variants", nlohmann::json::array({{{"name", "v"}}})}}})}};
      const auto m = kjit::Manifest::parse(doc.dump(), "/kernels/kjit.json");
      const auto& k = m.kernels().at(0);
      CHECK(k.options.has(row.name));
      const CompileOptions base{.arch = kjit::Arch::sm(90)};
      const CompileOptions o = k.options_for(k.variant("v"), base);
      if (row.kind == CompileOptionKind::path_list) {
        // the program's include path, not the options (loader/kernel_request)
        CHECK(k.options.values.include_dirs == std::vector<std::filesystem::path>{"/kernels/inc"});
        CHECK(o.include_dirs.empty());
        continue;
      }
      CHECK(kjit::compile_option(o, row.name) == kjit::compile_option(flipped(row), row.name));
      // The same key in a variant: a scalar overrides the kernel's default, a list appends.
      doc["kernels"][0].erase("options");
      doc["kernels"][0]["variants"][0][std::string(row.manifest)] = example_json(row);
      const auto mv = kjit::Manifest::parse(doc.dump(), "/kernels/kjit.json");
      const auto& kv = mv.kernels().at(0);
      CHECK(kjit::compile_option(kv.options_for(kv.variant("v"), base), row.name) ==
            kjit::compile_option(flipped(row), row.name));
    }
  }

  TEST_CASE("option fields: max_registers takes one range in C++ flags the typed field manifests and setters") {
    const auto* row = kjit::find_compile_option("max_registers");
    REQUIRE(row != nullptr);
    CHECK(row->min == 0);
    CHECK(row->max == 255);
    CHECK(kjit::normalized(CompileOptions{.max_registers = 255}).max_registers == 255);
    CHECK_THROWS_WITH_AS(kjit::normalized(CompileOptions{.max_registers = 256}), doctest::Contains("max_registers"),
                         kjit::UsageError);
    CHECK_THROWS_AS(kjit::normalized(CompileOptions{.max_registers = -3}), kjit::UsageError);
    CHECK_THROWS_AS(kjit::normalized(CompileOptions{.flags = {"-maxrregcount=256"}}), kjit::UsageError);
    CHECK(kjit::normalized(CompileOptions{.flags = {"-maxrregcount=255"}}).max_registers == 255);
    CompileOptions o;
    CHECK_THROWS_WITH_AS(kjit::set_compile_option(o, "max_registers", 300), doctest::Contains("0 to 255"),
                         kjit::UsageError);
    CHECK_THROWS_WITH_AS(kjit::set_compile_option(o, "fast_math", 1), doctest::Contains("fast_math"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(kjit::set_compile_option(o, "fastmath", true), doctest::Contains("fast_math"),
                         kjit::UsageError);
    CHECK_THROWS_AS(kjit::set_compile_option(o, "arch", std::string("volta")), kjit::UsageError);
    CHECK(o.max_registers == 0);
    CHECK_FALSE(o.fast_math);
    const std::string manifest = R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "options": {"max_registers": 256}}]})";
    CHECK_THROWS_WITH_AS(kjit::Manifest::parse(manifest, "/k/kjit.json"), doctest::Contains("0 to 255"),
                         kjit::UsageError);
  }

  TEST_CASE("option fields: docs/compile-options.md shows exactly the table") {
    const std::string page = read_all(std::filesystem::path(KJIT_SOURCE_DIR) / "docs" / "compile-options.md");
    const auto start = page.find("|---|");
    const auto end = page.find("<!-- end of the table -->");
    REQUIRE(start != std::string::npos);
    REQUIRE(end != std::string::npos);
    std::istringstream lines(page.substr(page.find('\n', start) + 1, end - page.find('\n', start) - 1));
    std::vector<std::string> shown;
    for (std::string line; std::getline(lines, line);) shown.push_back(line);
    std::vector<std::string> expected;
    for (const auto& row : kjit::compile_option_fields()) expected.push_back(doc_row(row));
    CHECK_MESSAGE(shown == expected, "docs/compile-options.md's table should read:\n"
                                         << fmt::format("{}", fmt::join(expected, "\n")));
  }

  TEST_CASE("option fields: kjit compile --help lists every field with its flags and doc") {
    const auto r = kjit::test::run_command(std::string(KJIT_BINARY_DIR) + "/cli/kjit compile --help");
    CHECK(r.code == 0);
    for (const auto& row : kjit::compile_option_fields()) {
      INFO(row.name);
      CHECK(r.out.find(fmt::format("{} (", row.name)) != std::string::npos);
      for (std::string_view flag : row.raw_flags) {
        if (!flag.empty()) CHECK(r.out.find(flag) != std::string::npos);
      }
    }
    CHECK(r.out.find("0 to 255") != std::string::npos);
  }
}
