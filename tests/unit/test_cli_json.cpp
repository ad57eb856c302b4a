// kjit --json: every subcommand prints exactly one JSON document on stdout whatever happens, with
// {"error": {"kind", "message", "file", "log"}} for a failed input, and the exit codes of one table
// (0 ok, 1 an input failed or differs, 2 usage, 3 error). Nothing here needs a GPU.
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

struct Json {
  int code = -1;
  nlohmann::json doc;  // discarded when stdout was not exactly one JSON document
  std::string out;
};

// `kjit --cache-dir DIR --json ARGS`, stderr dropped; stdout parsed as one document.
Json run(const kjit::test::TempDir& dir, const std::string& args) {
  auto r = kjit::test::run_command(k_kjit + " --cache-dir " + (dir / "cache").string() + " --json " + args +
                                   " 2>/dev/null");
  Json j{r.code, nlohmann::json::parse(r.out, nullptr, false), r.out};
  INFO("kjit --json ", args, " printed: ", r.out);
  REQUIRE_FALSE(j.doc.is_discarded());
  return j;
}

void check_error(const nlohmann::json& doc, const std::string& kind, const std::string& file = {}) {
  INFO(doc.dump());
  REQUIRE(doc.contains("error"));
  CHECK(doc["error"]["kind"] == kind);
  CHECK_FALSE(doc["error"]["message"].get<std::string>().empty());
  if (!file.empty()) CHECK(doc["error"]["file"] == file);
}

const char* k_good = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
const char* k_bad = "extern \"C\" __global__ void k(float* x) { int y = ; }\n";

}  // namespace

TEST_SUITE("cli json") {
  TEST_CASE("compile: a syntax error is a compile error with NVRTC's log and exit 1") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "bad.cu", k_bad);
    const std::string bad = (dir / "bad.cu").string();
    auto j = run(dir, "compile --arch sm_90 " + bad);
    CHECK(j.code == 1);
    REQUIRE(j.doc.is_array());
    REQUIRE(j.doc.size() == 1);
    check_error(j.doc[0], "compile", bad);
    CHECK(j.doc[0]["file"] == bad);
    CHECK(j.doc[0]["error"]["log"].get<std::string>().find("expected an expression") != std::string::npos);
  }

  TEST_CASE("compile: two files where one fails give both, in order, and exit 1") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    kjit::test::write_file(dir / "bad.cu", k_bad);
    auto j = run(dir, "compile --arch sm_90 " + (dir / "bad.cu").string() + " " + (dir / "good.cu").string());
    CHECK(j.code == 1);
    REQUIRE(j.doc.size() == 2);
    check_error(j.doc[0], "compile", (dir / "bad.cu").string());
    CHECK(j.doc[1]["outcome"] == "compiled");
    CHECK(j.doc[1]["file"] == (dir / "good.cu").string());
  }

  TEST_CASE("usage errors: an unknown option, a bad arch and a bad size exit 2 as JSON") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    auto unknown = run(dir, "compile --no-such-option " + (dir / "good.cu").string());
    CHECK(unknown.code == 2);
    check_error(unknown.doc, "usage");
    auto arch = run(dir, "ptx --arch sm_5 " + (dir / "good.cu").string());
    CHECK(arch.code == 2);
    check_error(arch.doc, "usage");
    auto size = run(dir, "cache prune --max-size lots");
    CHECK(size.code == 2);
    check_error(size.doc, "usage");
  }

  TEST_CASE("ptx sass resources explain and diff of a file that does not compile: exit 1 and the file") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    kjit::test::write_file(dir / "bad.cu", k_bad);
    const std::string bad = (dir / "bad.cu").string();
    for (const std::string cmd : {"ptx", "sass", "resources"}) {
      auto j = run(dir, cmd + " --arch sm_90 " + bad);
      INFO(cmd);
      CHECK(j.code == 1);
      check_error(j.doc, "compile", bad);
      CHECK(j.doc["error"].contains("log"));
    }
    auto diff = run(dir, "diff --arch sm_90 " + (dir / "good.cu").string() + " " + bad);
    CHECK(diff.code == 1);
    check_error(diff.doc, "compile", bad);
    // explain needs no compile: a NUL byte is what it refuses (a file that cannot be used: io, with the file).
    std::string nul = "extern \"C\" __global__ void k() {}";
    nul.push_back('\0');
    nul += "x";
    { std::ofstream(dir / "nul.cu", std::ios::binary) << nul; }
    auto explain = run(dir, "cache explain --arch sm_90 " + (dir / "nul.cu").string());
    CHECK(explain.code == 1);
    check_error(explain.doc, "io", (dir / "nul.cu").string());
  }

  TEST_CASE("a missing, binary or directory input is kind io with the file and exit 1 in every subcommand") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    std::string binary = "\x7f" "ELF";
    binary.push_back('\0');
    binary += "\x01\x02";
    { std::ofstream(dir / "binary.cu", std::ios::binary) << binary; }
    std::filesystem::create_directories(dir / "folder.cu");
    const std::string good = (dir / "good.cu").string();
    for (const std::string name : {"missing.cu", "binary.cu", "folder.cu"}) {
      const std::string bad = (dir / name).string();
      INFO(name);
      // compile: every file is tried; the good one still compiles, the bad one is an io error.
      auto c = run(dir, "compile --arch sm_90 " + bad + " " + good);
      CHECK(c.code == 1);
      REQUIRE(c.doc.is_array());
      REQUIRE(c.doc.size() == 2);
      check_error(c.doc[0], "io", bad);
      CHECK(c.doc[0]["file"] == bad);
      CHECK((c.doc[1]["outcome"] == "compiled" || c.doc[1]["outcome"] == "hit"));
      for (const std::string cmd : {"ptx", "sass", "resources", "cache explain", "compile --link"}) {
        INFO(cmd);
        auto j = run(dir, cmd + " --arch sm_90 " + bad);
        CHECK(j.code == 1);
        if (cmd.starts_with("compile")) {  // compile prints an array, whatever happens
          REQUIRE(j.doc.is_array());
          check_error(j.doc[0], "io", bad);
        } else {
          check_error(j.doc, "io", bad);
        }
      }
      auto diff = run(dir, "diff --arch sm_90 " + good + " " + bad);
      CHECK(diff.code == 1);
      check_error(diff.doc, "io", bad);
    }
    // warm: a source that is not there, or a manifest naming a file that is not there.
    auto warm = run(dir, "warm --arch sm_90 " + (dir / "no-such-folder").string());
    CHECK(warm.code == 1);
    check_error(warm.doc, "io");
  }

  // Refused before NVRTC runs (#38): the message names the flag and the closest option; a flag
  // kjit takes for NVRTC's but whose value NVRTC refuses still comes back with NVRTC's log.
  TEST_CASE("a flag neither NVRTC nor nvcc has is usage (exit 2) naming it and the closest option") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    const std::string good = (dir / "good.cu").string();
    auto j = run(dir, "compile --arch sm_90 " + good + " -- --bogus-flag");
    CHECK(j.code == 2);
    REQUIRE(j.doc.is_array());
    check_error(j.doc[0], "usage", good);
    CHECK(j.doc[0]["error"]["message"].get<std::string>().find("\"--bogus-flag\"") != std::string::npos);
    CHECK(j.doc[0]["error"]["message"].get<std::string>().find("the closest option is") != std::string::npos);
    auto ptx = run(dir, "ptx --arch sm_90 " + good + " -- --bogus-flag");
    CHECK(ptx.code == 2);
    check_error(ptx.doc, "usage", good);
    CHECK(ptx.doc["error"]["message"].get<std::string>().find("--bogus-flag") != std::string::npos);
    auto value = run(dir, "ptx --arch sm_90 " + good + " -- --dopt=sometimes");
    CHECK(value.code == 2);
    check_error(value.doc, "usage", good);
    CHECK(value.doc["error"]["log"].get<std::string>().find("dopt") != std::string::npos);
  }

  TEST_CASE("successes are one document too: ptx and sass carry their text") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    auto ptx = run(dir, "ptx --arch sm_90 " + (dir / "good.cu").string());
    CHECK(ptx.code == 0);
    CHECK(ptx.doc["ptx"].get<std::string>().find(".entry k") != std::string::npos);
    auto info = run(dir, "info");
    CHECK(info.code == 0);
    CHECK(info.doc.contains("nvrtc_version"));
  }

  TEST_CASE("cache verify with a damaged entry lists it and exits 1, and warm with a failing kernel exits 1") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    auto c = run(dir, "compile --arch sm_90 " + (dir / "good.cu").string());
    REQUIRE(c.code == 0);
    auto ls = run(dir, "cache ls");
    REQUIRE(ls.doc.size() == 1);
    const std::string entry = ls.doc[0]["path"];
    { std::ofstream(entry, std::ios::binary | std::ios::trunc) << "KJIT damaged"; }
    auto verify = run(dir, "cache verify");
    CHECK(verify.code == 1);
    CHECK(verify.doc["damaged"].size() == 1);

    kjit::test::write_file(dir / "k" / "bad.cu", k_bad);
    kjit::test::write_file(dir / "k" / "kjit.json", R"({"kjit_manifest": 1, "kernels": [{"file": "bad.cu"}]})");
    auto warm = run(dir, "warm --arch sm_90 " + (dir / "k").string());
    CHECK(warm.code == 1);
    CHECK(warm.doc["failed"] == 1);
  }

  // #30 item 5: a Latin-1 byte made ptx, resources, sass, diff and explain abort (134) and compile exit 3.
  TEST_CASE("a Latin-1 byte in a file name or the compile log gives one valid document and the text mode's exit status") {
    kjit::test::TempDir dir;
    const std::string name = (dir / "caf\xe9.cu").string();  // not UTF-8
    kjit::test::write_file(name, k_good);
    const std::string quoted = "'" + name + "'";
    const std::string cache = " --cache-dir " + (dir / "cache").string() + " ";
    for (const std::string& cmd : std::vector<std::string>{"compile --arch sm_90 ", "ptx --arch sm_90 ",
                                                           "sass --arch sm_90 ", "resources --arch sm_90 ",
                                                           "cache explain --arch sm_90 ",
                                                           "diff --arch sm_90 " + quoted + " "}) {
      INFO(cmd);
      const int text_code = kjit::test::run_command(k_kjit + cache + cmd + quoted + " >/dev/null 2>&1").code;
      auto j = run(dir, cmd + quoted);
      CHECK(j.code == text_code);
      // sass needs nvdisasm or cuobjdump, which a toolkit may lack: then both modes exit 2.
      if (!cmd.starts_with("sass")) CHECK(j.code == 0);
      const std::string doc = j.doc.dump();
      if (cmd.starts_with("compile") || cmd.starts_with("ptx") || cmd.starts_with("sass") ||
          cmd.starts_with("cache")) {
        CHECK(doc.find("caf\\\\xE9.cu") != std::string::npos);  // the raw byte, escaped
      }
    }
    // A byte in the source that NVRTC quotes in its log.
    const std::string bad = (dir / "latin.cu").string();
    kjit::test::write_file(bad, "extern \"C\" __global__ void k(float* x) { int caf\xe9 = ; }\n");
    const int text_code = kjit::test::run_command(k_kjit + cache + "compile --arch sm_90 " + bad + " >/dev/null 2>&1").code;
    auto j = run(dir, "compile --arch sm_90 " + bad);
    CHECK(j.code == text_code);
    CHECK(j.code == 1);
    REQUIRE(j.doc.is_array());
    check_error(j.doc[0], "compile", bad);
  }

  // #30 item 8: /dev/zero as the source was read until memory ran out (internal, exit 3).
  TEST_CASE("a device as the source is refused as an io error for compile ptx and explain, without reading it") {
    kjit::test::TempDir dir;
    for (const std::string cmd : {"compile --arch sm_90 ", "ptx --arch sm_90 ", "cache explain --arch sm_90 "}) {
      INFO(cmd);
      // A memory bound, so that reading without bound fails the test instead of the machine.
      auto r = kjit::test::run_command("prlimit --as=3000000000 " + k_kjit + " --cache-dir " + (dir / "cache").string() +
                                       " --json " + cmd + "/dev/zero 2>/dev/null");
      auto doc = nlohmann::json::parse(r.out, nullptr, false);
      REQUIRE_MESSAGE(!doc.is_discarded(), r.out);
      CHECK(r.code == 1);
      const auto& error = doc.is_array() ? doc.at(0) : doc;
      check_error(error, "io");
      CHECK(error["error"]["message"].get<std::string>().find("not a regular file") != std::string::npos);
    }
    kjit::test::write_file(dir / "big.cu", std::string(4096, ' ') + k_good);
    auto r = kjit::test::run_command("KJIT_MAX_SOURCE_SIZE=1k " + k_kjit + " --cache-dir " + (dir / "cache").string() +
                                     " --json ptx --arch sm_90 " + (dir / "big.cu").string() + " 2>/dev/null");
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_MESSAGE(!doc.is_discarded(), r.out);
    CHECK(r.code == 1);
    check_error(doc, "io");
    CHECK(doc["error"]["message"].get<std::string>().find("KJIT_MAX_SOURCE_SIZE") != std::string::npos);
    // A manifest over the cap too.
    kjit::test::write_file(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [{"file": "good.cu"}]})" +
                                                    std::string(2048, ' '));
    kjit::test::write_file(dir / "k/good.cu", k_good);
    auto warm = kjit::test::run_command("KJIT_MAX_SOURCE_SIZE=1k " + k_kjit + " --cache-dir " +
                                        (dir / "cache").string() + " --json warm --arch sm_90 " +
                                        (dir / "k").string() + " 2>/dev/null");
    CHECK(warm.code == 1);
    CHECK(warm.out.find("KJIT_MAX_SOURCE_SIZE") != std::string::npos);
  }

  // #30 item 9: -o under a file was kind internal, exit 3.
  TEST_CASE("-o under a file is an io error with exit 1") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "ok.cu", k_good);
    auto j = run(dir, "compile --arch sm_90 -o " + (dir / "ok.cu/sub").string() + " " + (dir / "ok.cu").string());
    CHECK(j.code == 1);
    const auto& error = j.doc.is_array() ? j.doc.at(0) : j.doc;
    check_error(error, "io");
    const int text_code = kjit::test::run_command(k_kjit + " --cache-dir " + (dir / "cache").string() +
                                                  " compile --arch sm_90 -o " + (dir / "ok.cu/sub").string() + " " +
                                                  (dir / "ok.cu").string() + " >/dev/null 2>&1")
                              .code;
    CHECK(text_code == 1);
  }
}
