// kjit::Manifest: the kjit.json format: overlays of variants, the default variant, and errors
// that name the file and the JSON position or the unknown key.
#include <kjit/tools.hpp>
#include <kjit/manifest.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

namespace {

std::string error_of(std::string_view text) {
  try {
    kjit::Manifest::parse(text, "/kernels/kjit.json");
  } catch (const kjit::UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_SUITE("Manifest") {
  TEST_CASE("Manifest: variants overlay the kernel's options and instantiations and include dirs are relative") {
    auto m = kjit::Manifest::parse(R"({
      "kjit_manifest": 1,
      "kernels": [{
        "file": "./nn/../square.cu",
        "options": {"std": "c++17", "defines": ["X=1"], "include_dirs": ["inc"], "fast_math": false,
                    "line_info": false, "max_registers": 0, "flags": ["-Xptxas=-v"]},
        "instantiate": ["kjit::square<float>"],
        "variants": [
          {"name": "block128", "defines": ["BLOCK=128"]},
          {"name": "block256", "defines": ["BLOCK=256"], "instantiate": ["kjit::square<__half>"],
           "flags": ["--extra-device-vectorization"], "std": "c++20", "fast_math": true, "max_registers": 64}
        ]}]})",
                                   "/kernels/kjit.json");
    REQUIRE(m.kernels().size() == 1);
    const auto& k = m.kernels()[0];
    CHECK(k.file == "square.cu");
    CHECK(m.find("square.cu") == &k);
    CHECK(m.find("other.cu") == nullptr);
    CHECK(k.options.values.include_dirs == std::vector<std::filesystem::path>{"/kernels/inc"});
    CHECK(k.variant_names() == std::vector<std::string>{"block128", "block256"});
    CHECK(&k.variant("") == &k.variants[0]);  // no name: the first variant

    auto a = k.options_for(k.variant("block128"), kjit::CompileOptions{.arch = kjit::Arch::sm(90)});
    CHECK(a.arch == kjit::Arch::sm(90));
    CHECK(a.std == "c++17");
    CHECK(a.defines == std::vector<std::string>{"X=1", "BLOCK=128"});
    CHECK(a.flags == std::vector<std::string>{"-Xptxas=-v"});
    CHECK_FALSE(a.fast_math);
    CHECK(k.name_expressions_for(k.variant("block128")) == std::vector<std::string>{"kjit::square<float>"});

    auto b = k.options_for(k.variant("block256"));
    CHECK(b.std == "c++20");
    CHECK(b.fast_math);
    CHECK(b.max_registers == 64);
    CHECK(b.defines == std::vector<std::string>{"X=1", "BLOCK=256"});
    CHECK(b.flags == std::vector<std::string>{"-Xptxas=-v", "--extra-device-vectorization"});
    CHECK(k.name_expressions_for(k.variant("block256")) ==
          std::vector<std::string>{"kjit::square<float>", "kjit::square<__half>"});
  }

  TEST_CASE("Manifest: a kernel without variants has one default variant named by the empty string") {
    auto m = kjit::Manifest::parse(R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu"}]})", "/k/kjit.json");
    REQUIRE(m.kernels().size() == 1);
    CHECK(m.kernels()[0].variant_names() == std::vector<std::string>{""});
    CHECK(m.kernels()[0].variant("").name.empty());
    CHECK(kjit::Manifest::parse(R"({"kjit_manifest": 1})", "/k/kjit.json").kernels().empty());
  }

  TEST_CASE("Manifest: invalid JSON names the file and the line and column") {
    std::string e = error_of("{\n  \"kjit_manifest\": 1,\n  \"kernels\": [ {\"file\": \"a.cu\",} ]\n}");
    CHECK(e.find("/kernels/kjit.json") != std::string::npos);
    CHECK(e.find("line 3, column") != std::string::npos);
  }

  TEST_CASE("Manifest: unknown keys and wrong types and missing fields name the key and where it is") {
    std::string typo = error_of(R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "options": {"defnies": ["X"]}}]})");
    CHECK(typo.find("/kernels/kjit.json") != std::string::npos);
    CHECK(typo.find("kernels[0].options") != std::string::npos);
    CHECK(typo.find("unknown key \"defnies\"") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernel": []})").find("unknown key \"kernel\"") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "variants": [{"name": "v", "defnes": []}]}]})")
              .find("kernels[0].variants[0]: unknown key \"defnes\"") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 2})").find("unsupported version 2") != std::string::npos);
    CHECK(error_of(R"({"kernels": []})").find("missing \"kjit_manifest\"") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernels": [{"options": {}}]})").find("missing \"file\"") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "options": {"defines": "X"}}]})")
              .find("kernels[0].options.defines: expected an array") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "options": {"fast_math": 1}}]})")
              .find("expected true or false") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu"}, {"file": "a.cu"}]})")
              .find("listed twice") != std::string::npos);
    CHECK(error_of(R"({"kjit_manifest": 1, "kernels": [{"file": "/abs.cu"}]})").find("relative") != std::string::npos);
  }

  TEST_CASE("Manifest: an unknown variant lists the known ones") {
    auto m = kjit::Manifest::parse(
        R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "variants": [{"name": "small"}, {"name": "big"}]}]})",
        "/k/kjit.json");
    try {
      (void)m.kernels()[0].variant("huge");
      FAIL("no error");
    } catch (const kjit::UsageError& e) {
      std::string w = e.what();
      CHECK(w.find("\"huge\"") != std::string::npos);
      CHECK(w.find("a.cu") != std::string::npos);
      CHECK(w.find("small, big") != std::string::npos);
    }
  }

  TEST_CASE("Manifest: the shipped kernels_src manifest and a folder and a missing file are read") {
    auto shipped = kjit::Manifest::read(std::string(KJIT_SOURCE_DIR) + "/kernels_src");
    CHECK(shipped.path().filename() == "kjit.json");
    auto fixture = kjit::Manifest::read(std::string(KJIT_SOURCE_DIR) + "/tests/data/warm_fixture/kjit.json");
    CHECK(fixture.kernels().size() == 3);
    CHECK_THROWS_AS(kjit::Manifest::read("/nonexistent/kjit.json"), kjit::IoError);
  }
}
