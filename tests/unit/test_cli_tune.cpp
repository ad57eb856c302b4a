// kjit tune without a GPU, in real processes: --help answers; a manifest without a tuning entry
// that lists shapes and a bad tuning entry are usage errors (exit 2) that say what and where;
// with shapes but no driver, exit 3 with the error's kind "driver" in the JSON.
#include <kjit/device.hpp>

#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const char* k_tuned = R"J({"kjit_manifest": 1, "kernels": [{"file": "s.cu", "tuning": [{
  "name": "s", "candidates": [{"kernel": "s", "block": 128}], "key": ["n"], "grid": "ceil_div(n, block)",
  "arguments": [{"name": "y", "type": "float*", "count": "n"}], "shapes": [{"n": 100}]}]}]})J";

}  // namespace

TEST_SUITE("cli tune") {
  TEST_CASE("kjit tune --help says what it does and its exit codes") {
    const auto r = kjit::test::run_command(k_kjit + " tune --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("tuning") != std::string::npos);
    CHECK(r.out.find("--force") != std::string::npos);
    CHECK(r.out.find("--device") != std::string::npos);
    CHECK(r.out.find("kjit cache ls --tuning") != std::string::npos);
    CHECK(r.out.find("Exit codes") != std::string::npos);
  }

  TEST_CASE("kjit tune refuses manifests with nothing to tune and bad tuning entries") {
    kjit::test::TempDir dir;
    write(dir.path() / "plain" / "kjit.json", R"J({"kjit_manifest": 1, "kernels": [{"file": "s.cu"}]})J");
    auto r = kjit::test::run_command(k_kjit + " --json tune " + (dir.path() / "plain").string());
    CHECK(r.code == 2);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["error"]["kind"] == "usage");
    CHECK(j["error"]["message"].get<std::string>().find("no \"tuning\" entry of " +
                                                         (dir.path() / "plain" / "kjit.json").string()) !=
          std::string::npos);

    std::string bad = k_tuned;
    bad.replace(bad.find("ceil_div(n, block)"), 18, "ceil_div(n, rows)");
    write(dir.path() / "bad" / "kjit.json", bad);
    r = kjit::test::run_command(k_kjit + " tune " + (dir.path() / "bad").string() + " 2>&1");
    CHECK(r.code == 2);
    CHECK(r.out.find("kernels[0].tuning[0]") != std::string::npos);
    CHECK(r.out.find("\"rows\" is not a variable of the key or of a listed shape") != std::string::npos);
  }

  TEST_CASE("kjit tune without a driver is exit 3 with kind driver") {
    if (kjit::driver_available()) {
      KJIT_SKIP("a driver is here: the no-driver case is not this machine's");
    }
    kjit::test::TempDir dir;
    write(dir.path() / "k" / "kjit.json", k_tuned);
    const auto r = kjit::test::run_command(k_kjit + " --json tune " + (dir.path() / "k").string());
    CHECK(r.code == 3);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["error"]["kind"] == "driver");
    CHECK(j["error"]["message"].get<std::string>().find("kjit tune times kernels on a GPU") != std::string::npos);
  }

  TEST_CASE("kjit tune with no arguments has something to decide: without a driver that is exit 3") {
    if (kjit::driver_available()) {
      KJIT_SKIP("a driver is here: kjit tune times the shipped entries (the gpu tests)");
    }
    const auto r = kjit::test::run_command(k_kjit + " --json tune");  // the shipped kernels_src
    CHECK(r.code == 3);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["error"]["kind"] == "driver");
  }
}
