// Tuning specs without a GPU: expressions (random values against C++'s own arithmetic, errors
// that name the text and position), a spec's key, grid, outputs and scalar bytes, the checks of
// a spec, the manifest's "tuning" entries (round trip and errors that say where), the
// loader's lookup, a typed Tuner's signature against the spec, made-up arguments, and that a
// spec's grid and arguments are part of the decision key.
#include <kjit/error.hpp>
#include <kjit/float16.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>
#include <kjit/tune.hpp>

#include "core/tune/decision.hpp"
#include "core/tune/expression.hpp"
#include "core/tune/spec.hpp"
#include "core/tune/synthetic_arguments.hpp"
#include "support/helpers.hpp"
#include "support/launch_probes.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <random>
#include <map>
#include <set>

namespace {

using kjit::tune::Expression;

long long eval(const Expression& e, const std::map<std::string, long long>& values) {
  return e.evaluate([&](std::size_t i) -> std::optional<long long> {
    auto it = values.find(e.variables()[i]);
    if (it == values.end()) return std::nullopt;
    return it->second;
  });
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kjit::UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

kjit::TuneSpec scale_spec() {
  kjit::TuneSpec s;
  s.name = "scale";
  s.candidates = {{.kernel = "scale<1>", .block = 256}, {.kernel = "scale<0>", .param = 4, .block = {16, 8}}};
  s.key = {"pow2(n)", "m"};
  s.grid = {"ceil_div(n, block * param + 1)", "m + block_y"};
  s.arguments = {{.name = "x", .type = "const float*", .count = "n"},
                 {.name = "y", .type = "float*", .count = "n * m", .output = kjit::TuneArgument::Output::restore},
                 {.name = "counter", .type = "unsigned*", .count = "1", .output = kjit::TuneArgument::Output::reset_to_zero},
                 {.name = "a", .type = "float", .value = "1.5"},
                 {.name = "h", .type = "__half", .value = "-0.25"},
                 {.name = "n", .type = "long long", .value = "n - 1"}};
  s.shapes = {{{"n", 1000}, {"m", 3}}};
  return s;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const char* k_manifest = R"J({
  "kjit_manifest": 1,
  "kernels": [{
    "file": "scale.cu",
    "tuning": [{
      "name": "scale",
      "candidates": [{"kernel": "scale<1>", "block": 256},
                     {"kernel": "scale<0>", "block": [16, 8, 2], "param": 4, "defines": ["X=1"], "shared_mem": 128,
                      "cluster": [2], "label": "wide"}],
      "key": ["pow2(n)"],
      "grid": "ceil_div(n, block)",
      "arguments": [{"name": "x", "type": "const float*", "count": "n", "fill": "zero"},
                    {"name": "y", "type": "float*", "count": "n", "output": "restore", "fill": 2.5},
                    {"name": "a", "type": "float", "value": 1.5},
                    {"name": "n", "type": "int", "value": "n"}],
      "shapes": [{"n": 1048576}, {"n": 4096}]
    }]
  }]
})J";

}  // namespace

TEST_SUITE("tune spec") {
  TEST_CASE("expressions compute what C++ computes on random values") {
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<long long> value(1, 1'000'000);
    const auto a_ = Expression::parse("a + b * c - d / e");
    const auto ceil_ = Expression::parse("ceil_div(n, block)");
    const auto mod_ = Expression::parse("(a - b) % 7 * -c");
    const auto minmax_ = Expression::parse(" min(a, b) * max( a , b ) + +3");
    const auto pow_ = Expression::parse("pow2(n)");
    CHECK(a_.variables() == std::vector<std::string>{"a", "b", "c", "d", "e"});
    CHECK(ceil_.text() == "ceil_div(n, block)");
    for (int i = 0; i < 500; ++i) {
      const long long a = value(rng), b = value(rng), c = value(rng), d = value(rng), e = value(rng);
      REQUIRE(eval(a_, {{"a", a}, {"b", b}, {"c", c}, {"d", d}, {"e", e}}) == a + b * c - d / e);
      REQUIRE(eval(ceil_, {{"n", a}, {"block", b}}) == (a + b - 1) / b);
      REQUIRE(eval(mod_, {{"a", a}, {"b", b}, {"c", c}}) == (a - b) % 7 * -c);
      REQUIRE(eval(minmax_, {{"a", a}, {"b", b}}) == std::min(a, b) * std::max(a, b) + 3);
      const long long p = eval(pow_, {{"n", a}});
      REQUIRE(p >= a);
      REQUIRE((p & (p - 1)) == 0);
      REQUIRE(p / 2 < a);
    }
    CHECK(eval(Expression::parse("ceil_div(0 - 7, 2)"), {}) == -3);
  }

  TEST_CASE("expression errors name the text and the position") {
    const auto message = [](const char* text) { return error_of([&] { Expression::parse(text); }); };
    CHECK(message("ceil_div(n)").find("expression \"ceil_div(n)\": expected ','") != std::string::npos);
    CHECK(message("n +").find("before the end") != std::string::npos);
    CHECK(message("foo(n)").find("unknown function \"foo\"") != std::string::npos);
    CHECK(message("n $ 2").find("unexpected \"$\" at position 3") != std::string::npos);
    CHECK(message("(n").find("expected ')'") != std::string::npos);
    CHECK(message("99999999999999999999").find("number too large") != std::string::npos);
    CHECK(message("").find("before the end") != std::string::npos);
    const auto e = Expression::parse("n / (m - m)");
    CHECK(error_of([&] { eval(e, {{"n", 5}, {"m", 3}}); }).find("\"n / (m - m)\": division by zero") !=
          std::string::npos);
    CHECK(error_of([&] { eval(e, {{"n", 5}}); }).find("no value for \"m\"") != std::string::npos);
  }

  TEST_CASE("a spec gives the key the grid the outputs and the scalars of a shape") {
    const kjit::tune::CompiledSpec spec(scale_spec());
    const std::vector<kjit::TuneValue> shape{{"m", 3}, {"n", 1000}};
    CHECK(spec.key(shape).text() == "n<=1024 m=3");
    CHECK(spec.key(std::vector<kjit::TuneValue>{{"n", 1024}, {"m", 3}}).text() == "n<=1024 m=3");
    CHECK(error_of([&] { spec.key(std::vector<kjit::TuneValue>{{"n", 5}}); }).find("no value for \"m\"") !=
          std::string::npos);
    const auto& c = spec.spec().candidates;
    const kjit::Dim3 g0 = spec.grid(c[0], shape, 132), g1 = spec.grid(c[1], shape, 132);
    CHECK(g0.x == 1000);  // param 0: ceil_div(1000, 1)
    CHECK(g0.y == 3 + 1);
    CHECK(g0.z == 1);
    CHECK(g1.x == (1000 + 65 - 1) / 65);
    CHECK(g1.y == 3 + 8);
    // A grid dimension below 1 is an error naming the expression.
    CHECK(error_of([&] { spec.grid(c[0], std::vector<kjit::TuneValue>{{"n", -5}, {"m", 3}}, 0); })
              .find("grid \"ceil_div(n, block * param + 1)\" is -5") != std::string::npos);

    // Outputs from the call's own pointers (random addresses, never null).
    std::mt19937_64 rng(5);
    std::vector<void*> values;
    for (int i = 0; i < 6; ++i) values.push_back(reinterpret_cast<void*>((rng() | 1) & 0x7fffffffffffULL));
    std::vector<void*> args;
    for (auto& v : values) args.push_back(&v);
    const kjit::TuneBuffers b = spec.buffers(shape, args.data(), 0);
    REQUIRE(b.restore.size() == 1);
    CHECK(b.restore[0].first == values[1]);
    CHECK(b.restore[0].second == 3000 * sizeof(float));
    REQUIRE(b.reset_to_zero.size() == 1);
    CHECK(b.reset_to_zero[0].first == values[2]);
    CHECK(b.reset_to_zero[0].second == sizeof(unsigned));

    const auto a = spec.scalar_bytes(3, shape, 0);
    float af = 0;
    REQUIRE(a.size() == 4);
    std::memcpy(&af, a.data(), 4);
    CHECK(af == 1.5f);
    const auto h = spec.scalar_bytes(4, shape, 0);
    REQUIRE(h.size() == 2);
    std::uint16_t bits = 0;
    std::memcpy(&bits, h.data(), 2);
    CHECK(kjit::half::to(bits) == -0.25f);
    const auto n = spec.scalar_bytes(5, shape, 0);
    long long nv = 0;
    REQUIRE(n.size() == 8);
    std::memcpy(&nv, n.data(), 8);
    CHECK(nv == 999);
    CHECK(kjit::tune::CompiledSpec::shape_text(shape) == "m=3 n=1000");
  }

  TEST_CASE("a spec's key and grid for a shape allocate nothing: a decided shape's launch computes them") {
    const kjit::tune::CompiledSpec spec(scale_spec());
    const auto& c = spec.spec().candidates;
    std::mt19937_64 rng(61);
    for (int round = 0; round < 100; ++round) {
      const long long n = 1 + static_cast<long long>(rng() % 100000000), m = 1 + static_cast<long long>(rng() % 1000);
      const std::vector<kjit::TuneValue> shape{{"m", m}, {"n", n}};
      kjit::test::LaunchProbe probe;
      const kjit::TuneKey key = spec.key(shape);
      const kjit::Dim3 g0 = spec.grid(c[0], shape, 132), g1 = spec.grid(c[1], shape, 132);
      const auto seen = probe.stop();
      CHECK(seen.allocations == 0);
      CHECK(seen.locks == 0);
      CHECK(key.text() == fmt::format("n<={} m={}", kjit::tune::next_power_of_two(n), m));
      CHECK(g0.x == static_cast<unsigned>(n));
      CHECK(g1.x == static_cast<unsigned>((n + 65 - 1) / 65));
      CHECK(g1.y == static_cast<unsigned>(m + 8));
    }
  }

  TEST_CASE("a spec that does not hold together is refused with what is wrong") {
    const auto refused = [](auto change) {
      kjit::TuneSpec s = scale_spec();
      change(s);
      return error_of([&] { kjit::tune::CompiledSpec{s}; });
    };
    CHECK(refused([](auto& s) { s.candidates.clear(); }).find("no candidates") != std::string::npos);
    CHECK(refused([](auto& s) { s.grid = {"ceil_div(n, rows)"}; }).find("\"rows\" is not a variable") !=
          std::string::npos);
    CHECK(refused([](auto& s) { s.grid = {}; }).find("1 to 3 expressions") != std::string::npos);
    CHECK(refused([](auto& s) { s.grid = {"1", "1", "1", "1"}; }).find("found 4") != std::string::npos);
    CHECK(refused([](auto& s) { s.arguments[0].count = "n * block"; }).find("known only in the grid") !=
          std::string::npos);
    CHECK(refused([](auto& s) { s.arguments[0].count = ""; }).find("needs \"count\"") != std::string::npos);
    CHECK(refused([](auto& s) { s.arguments[3].value = ""; }).find("needs \"value\"") != std::string::npos);
    CHECK(refused([](auto& s) { s.arguments[3].output = kjit::TuneArgument::Output::restore; })
              .find("only a pointer can be an output") != std::string::npos);
    CHECK(refused([](auto& s) { s.arguments[1].type = "float4*"; }).find("argument type \"float4*\"") !=
          std::string::npos);
    CHECK(refused([](auto& s) { s.arguments[1].fill = "ones"; }).find("fill \"ones\"") != std::string::npos);
    CHECK(refused([](auto& s) { s.key = {"n * 2"}; }).find("key \"n * 2\"") != std::string::npos);
    CHECK(refused([](auto& s) { s.grid = {"n +"}; }).find("expression \"n +\"") != std::string::npos);
    // The candidate fields and sm_count are known in the grid.
    CHECK(refused([](auto& s) { s.grid = {"max(1, sm_count * param + shared_mem + block_z)"}; }) ==
          "(no UsageError)");
    CHECK(kjit::tune::CompiledSpec([] {
            auto s = scale_spec();
            s.grid = {"sm_count"};
            return s;
          }()).uses_sm_count());
  }

  TEST_CASE("argument types kjit can make up") {
    using kjit::tune::parse_argument_type;
    CHECK(parse_argument_type("const float*").pointer);
    CHECK(parse_argument_type("const float*").size() == sizeof(void*));
    CHECK(parse_argument_type("float * const").pointer);
    CHECK(parse_argument_type("float const*").pointer);
    CHECK(parse_argument_type("const int").size() == 4);
    CHECK(parse_argument_type("__nv_bfloat16*").element_size == 2);
    CHECK(parse_argument_type("unsigned long long").size() == 8);
    CHECK(parse_argument_type("std::int64_t").size() == 8);
    CHECK(parse_argument_type("char").size() == 1);
    CHECK(!parse_argument_type("int").pointer);
    CHECK(error_of([] { parse_argument_type("Foo*"); }).find("known: float, double") != std::string::npos);
  }

  TEST_CASE("made-up arguments are random in range a constant or zero") {
    using kjit::tune::make_elements;
    using kjit::tune::parse_argument_type;
    const auto f = make_elements(parse_argument_type("float*"), 4096, "random", 3);
    REQUIRE(f.size() == 4096 * 4);
    std::set<float> distinct;
    for (std::size_t i = 0; i < 4096; ++i) {
      float v = 0;
      std::memcpy(&v, f.data() + 4 * i, 4);
      REQUIRE(v >= -1.0f);
      REQUIRE(v < 1.0f);
      distinct.insert(v);
    }
    CHECK(distinct.size() > 4000);
    CHECK(make_elements(parse_argument_type("float*"), 4096, "random", 3) == f);  // seeded
    CHECK(make_elements(parse_argument_type("float*"), 4096, "random", 4) != f);
    const auto ints = make_elements(parse_argument_type("int*"), 1000, "random", 9);
    std::set<int> seen;
    for (std::size_t i = 0; i < 1000; ++i) {
      int v = 0;
      std::memcpy(&v, ints.data() + 4 * i, 4);
      REQUIRE(v >= 0);
      REQUIRE(v < 100);
      seen.insert(v);
    }
    CHECK(seen.size() > 50);
    const auto halves = make_elements(parse_argument_type("__half*"), 8, "2.5", 0);
    for (std::size_t i = 0; i < 8; ++i) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, halves.data() + 2 * i, 2);
      REQUIRE(kjit::half::to(bits) == 2.5f);
    }
    const auto zero = make_elements(parse_argument_type("double*"), 16, "zero", 0);
    CHECK(zero == std::vector<unsigned char>(16 * 8, 0));
    CHECK(error_of([] { make_elements(parse_argument_type("float*"), 4, "many", 0); }).find("fill \"many\"") !=
          std::string::npos);
  }

  TEST_CASE("a manifest's tuning entries round trip and the loader finds them") {
    kjit::test::TempDir dir;
    write(dir.path() / "kernels" / "kjit.json", k_manifest);
    write(dir.path() / "kernels" / "scale.cu", "template <int M> __global__ void scale(const float*, float*, float, int) {}\n");
    const auto m = kjit::Manifest::read(dir.path() / "kernels");
    REQUIRE(m.kernels().size() == 1);
    const auto& k = m.kernels()[0];
    REQUIRE(k.tuning.size() == 1);
    const kjit::TuneSpec& s = k.tuning_spec("scale");
    REQUIRE(s.candidates.size() == 2);
    CHECK(s.candidates[0].kernel == "scale<1>");
    CHECK(s.candidates[0].block.x == 256);
    const auto& wide = s.candidates[1];
    CHECK(wide.block.x == 16);
    CHECK(wide.block.y == 8);
    CHECK(wide.block.z == 2);
    CHECK(wide.param == 4);
    CHECK(wide.defines == std::vector<std::string>{"X=1"});
    CHECK(wide.shared_mem == 128);
    CHECK(wide.cluster.x == 2);
    CHECK(wide.cluster.y == 1);
    CHECK(wide.label == "wide");
    CHECK(s.key == std::vector<std::string>{"pow2(n)"});
    CHECK(s.grid == std::vector<std::string>{"ceil_div(n, block)"});
    REQUIRE(s.arguments.size() == 4);
    CHECK(s.arguments[0].fill == "zero");
    CHECK(s.arguments[1].output == kjit::TuneArgument::Output::restore);
    CHECK(std::stod(s.arguments[1].fill) == 2.5);
    CHECK(std::stod(s.arguments[2].value) == 1.5);
    CHECK(s.arguments[3].value == "n");
    REQUIRE(s.shapes.size() == 2);
    CHECK(s.shapes[1] == std::vector<std::pair<std::string, long long>>{{"n", 4096}});
    CHECK(error_of([&] { k.tuning_spec("other"); }).find("known: scale") != std::string::npos);

    kjit::Runtime rt(kjit::test::quiet_config(dir.path() / "cache"));
    kjit::KernelLoader loader({.folders = {dir.path() / "kernels"}, .use_environment = false, .use_installed = false},
                              rt);
    CHECK(loader.tuning("scale.cu", "scale").candidates.size() == 2);
    CHECK(error_of([&] { loader.tuning("scale.cu", "nope"); }).find("no such entry; known: scale") !=
          std::string::npos);
    // A typed tuner checks its signature against the spec's arguments (no GPU needed).
    auto tuner = loader.tuner<void(const float*, float*, float, int)>("scale.cu", "scale");
    CHECK(tuner.engine().key_for(std::vector<kjit::TuneValue>{{"n", 3000}}).text() == "n<=4096");
    const std::string wrong =
        error_of([&] { loader.tuner<void(const float*, float*, double, int)>("scale.cu", "scale"); });
    CHECK(wrong.find("the signature has 4 parameters (8 B, 8 B, 8 B, 4 B) but the spec lists 4 arguments") !=
          std::string::npos);
    CHECK(wrong.find("float a [4 B]") != std::string::npos);
    CHECK(error_of([&] { loader.tuner<void(const float*, float*)>("scale.cu", "scale"); })
              .find("has 2 parameters") != std::string::npos);
  }

  TEST_CASE("a manifest's bad tuning entry is refused saying where") {
    kjit::test::TempDir dir;
    const auto refused = [&](const std::string& from, const std::string& to) {
      std::string text = k_manifest;
      const auto at = text.find(from);
      REQUIRE(at != std::string::npos);
      text.replace(at, from.size(), to);
      return error_of([&] { kjit::Manifest::parse(text, dir.path() / "kjit.json"); });
    };
    CHECK(refused(R"J("block": [16, 8, 2])J", R"J("block": [16, 0])J").find("kernels[0].tuning[0].candidates[1].block[1]") !=
          std::string::npos);
    CHECK(refused(R"J("label": "wide")J", R"J("lable": "wide")J").find("unknown key \"lable\"") != std::string::npos);
    CHECK(refused(R"J("key": ["pow2(n)"],)J", "").find("missing \"key\"") != std::string::npos);
    CHECK(refused(R"J("grid": "ceil_div(n, block)",)J", "").find("missing \"grid\"") != std::string::npos);
    CHECK(refused(R"J("output": "restore")J", R"J("output": "keep")J").find("expected reset") != std::string::npos);
    CHECK(refused(R"J({"n": 4096})J", R"J({"n": "big"})J").find("kernels[0].tuning[0].shapes[1].n") !=
          std::string::npos);
    CHECK(refused(R"J("grid": "ceil_div(n, block)")J", R"J("grid": "ceil_div(rows, block)")J")
              .find("kernels[0].tuning[0]: tuning \"scale\": grid") != std::string::npos);
    const std::string no_args = refused(R"J("arguments": [)J", R"J("argumentz": [)J");
    CHECK(no_args.find("unknown key \"argumentz\"") != std::string::npos);
    // Shapes need arguments to make up.
    std::string text = k_manifest;
    const auto from = text.find(R"J("arguments")J"), to = text.find(R"J("shapes")J");
    text.erase(from, to - from);
    CHECK(error_of([&] { kjit::Manifest::parse(text, dir.path() / "kjit.json"); }).find("list them") !=
          std::string::npos);
    // Two entries of one name.
    std::string twice = k_manifest;
    const auto open = twice.find(R"J("tuning": [)J") + std::string(R"J("tuning": [)J").size();
    const auto close = twice.find(R"J(}]
  }])J");
    const std::string entry = twice.substr(open, close + 1 - open);
    twice.insert(close + 1, ", " + entry);
    CHECK(error_of([&] { kjit::Manifest::parse(twice, dir.path() / "kjit.json"); }).find("duplicate tuning entry") !=
          std::string::npos);
  }

  TEST_CASE("a spec's grid and arguments are part of the decision key") {
    const kjit::tune::CompiledSpec base(scale_spec());
    CHECK(base.launch_text() == "grid ceil_div(n, block * param + 1), m + block_y; const float* x [n], float* y [n * m] "
                                "restore, unsigned* counter [1] reset, float a = 1.5, __half h = -0.25, long long n = n - 1");
    auto f = kjit::tune::DecisionKeyFields{};
    f.source_key = "k";
    f.candidates = {"a"};
    std::set<std::string> keys{kjit::tune::decision_key(f).hex()};
    const auto vary = [&](auto change) {
      auto s = scale_spec();
      change(s);
      f.launch = kjit::tune::CompiledSpec(s).launch_text();
      keys.insert(kjit::tune::decision_key(f).hex());
    };
    vary([](auto&) {});
    vary([](auto& s) { s.grid[0] = "ceil_div(n, block)"; });
    vary([](auto& s) { s.arguments[3].type = "double"; });
    vary([](auto& s) { s.arguments[1].count = "n"; });
    vary([](auto& s) { s.arguments[1].output = kjit::TuneArgument::Output::none; });
    vary([](auto& s) { s.arguments[3].value = "2.5"; });
    CHECK(keys.size() == 7);
  }
}
