// NVRTC opened at run time (core/base/nvrtc_library): libkjit records no libnvrtc, and the kjit
// CLI, run as a process of its own here (NVRTC is opened once a process), takes the libnvrtc of
// the toolkit that KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH names before the loader's, and compiles
// with it; one whose libnvrtc does not open, or that has none, is an error naming the file. With the toolkit moved away (root only):
// consumer/toolkit_elsewhere_programs.
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// `kjit info --json` with `env` (VAR=value ...) and the toolkit variables otherwise unset.
nlohmann::json info_with(const std::string& env) {
  const auto r = kjit::test::run_command("env -u KJIT_CUDA_HOME -u CUDA_HOME -u CUDA_PATH " + env + " " +
                                         quoted(k_kjit) + " info --json 2>/dev/null");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  return nlohmann::json::parse(r.out);
}

// A toolkit of the test's own: the real one's headers and an empty lib64/ (the case puts its
// libnvrtc there).
std::filesystem::path fake_toolkit(const kjit::test::TempDir& tmp, const std::string& name,
                                   const std::filesystem::path& include) {
  const auto root = tmp / name;
  std::filesystem::create_directories(root / "lib64");
  std::filesystem::create_directory_symlink(include, root / "include");
  return root;
}

// `kjit ptx FILE --arch sm_90` in a process of its own, NVRTC not prepared (the background open
// would hide what the request opens), the loader's files traced: {exit status, stdout, stderr}.
struct Traced {
  int code = -1;
  std::string ptx, trace;
  // How many libnvrtc the process opened (ran the constructors of).
  int nvrtc_inits() const {
    int n = 0;
    for (std::size_t pos = trace.find("calling init: "); pos != std::string::npos; pos = trace.find("calling init: ", pos + 1)) {
      const std::size_t end = trace.find('\n', pos);
      if (trace.substr(pos, end - pos).find("/libnvrtc.so") != std::string::npos) ++n;
    }
    return n;
  }
};
// ... with `env` (VAR=value ...) besides.
Traced ptx_traced_with(const kjit::test::TempDir& tmp, const std::string& env, const std::filesystem::path& cu) {
  const auto err = tmp / "stderr.txt";
  const auto r = kjit::test::run_command("env -u KJIT_CUDA_HOME -u CUDA_HOME -u CUDA_PATH KJIT_PREPARE=off LD_DEBUG=files "
                                         "KJIT_CACHE_DIR=" + quoted((tmp / "c").string()) + " " + env + " " +
                                         quoted(k_kjit) + " ptx " + quoted(cu.string()) + " --arch sm_90 2>" +
                                         quoted(err.string()));
  return {r.code, r.out, kjit::test::read_file(err)};
}
// ... with the toolkit KJIT_CUDA_HOME names.
Traced ptx_traced(const kjit::test::TempDir& tmp, const std::filesystem::path& toolkit, const std::filesystem::path& cu) {
  return ptx_traced_with(tmp, "KJIT_CUDA_HOME=" + quoted(toolkit.string()), cu);
}

// `lib` replaced by the tests' own NVRTC (tests/data/fake_nvrtc: version 41.7, compiles nothing).
void replace_with_fake(const std::filesystem::path& lib) {
  std::filesystem::remove(lib);
  std::filesystem::copy_file(KJIT_FAKE_NVRTC, lib);
}
// A `kjit ptx` the fake NVRTC answered: asked again (its version makes another key, so no PTX an
// earlier library made is served), compiled by it, failed.
void check_compiled_by_fake(const Traced& t) {
  CHECK(t.code != 0);
  CHECK(t.ptx.find(".entry") == std::string::npos);
  CHECK_MESSAGE(t.trace.find("fake NVRTC: compiles nothing") != std::string::npos, t.trace.substr(0, 4000));
  CHECK(t.nvrtc_inits() >= 1);
}

// The answers kept in the cache folder's notes (base::nvrtc_facts: <cache>/nvrtc-<hash>), file by file.
std::vector<std::filesystem::path> kept_answers(const kjit::test::TempDir& tmp) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "c", ec)) {
    if (e.path().filename().string().starts_with("nvrtc-")) out.push_back(e.path());
  }
  return out;
}

}  // namespace

TEST_SUITE("nvrtc_library") {
  TEST_CASE("a hit in a new process opens no NVRTC and a changed libnvrtc is asked again for the key's version") {
    const nlohmann::json plain = info_with("");
    const std::filesystem::path real = plain.at("nvrtc_library").get<std::string>();
    const std::string soname = real.filename().string();
    const std::filesystem::path include = plain.at("toolkit_include_dirs").back().get<std::string>();
    kjit::test::TempDir tmp;
    const auto toolkit = fake_toolkit(tmp, "toolkit", include);
    const auto lib = toolkit / "lib64" / soname;
    std::filesystem::create_symlink(real, lib);
    std::mt19937_64 rng(std::random_device{}());
    const auto value = std::to_string(rng() % 100000);
    kjit::test::write_file(tmp / "k.cu", "__global__ void kept(float* p) { p[0] = " + value + ".25f; }\n");

    // The first process compiles: it opens NVRTC, asks it, and keeps the answer.
    const Traced first = ptx_traced(tmp, toolkit, tmp / "k.cu");
    REQUIRE_MESSAGE(first.code == 0, first.trace.substr(0, 4000));
    CHECK(first.ptx.find(".entry") != std::string::npos);
    CHECK(first.nvrtc_inits() >= 1);
    const auto answers = kept_answers(tmp);
    REQUIRE(answers.size() == 1);
    const std::string major_minor = plain.at("nvrtc_version").get<std::string>();
    const std::string version_line = "version " + major_minor.substr(0, major_minor.find('.')) + " " +
                                     major_minor.substr(major_minor.find('.') + 1) + "\n";
    CHECK_MESSAGE(kjit::test::read_file(answers[0]).find(version_line) != std::string::npos, version_line);
    CHECK(kjit::test::read_file(answers[0]).find(lib.string()) != std::string::npos);

    // A new process's hit: the same PTX, and no libnvrtc opened (its ~100 MB and constructors).
    const Traced hit = ptx_traced(tmp, toolkit, tmp / "k.cu");
    CHECK(hit.code == 0);
    CHECK(hit.ptx == first.ptx);
    CHECK_MESSAGE(hit.nvrtc_inits() == 0, hit.trace.substr(0, 4000));

    // The library replaced (another NVRTC, version 41.7, that compiles nothing): asked again, its
    // version makes another key, so the PTX the first one made is not served; it is compiled, and fails.
    replace_with_fake(lib);
    check_compiled_by_fake(ptx_traced(tmp, toolkit, tmp / "k.cu"));
    const nlohmann::json fake = info_with("KJIT_CACHE_DIR=" + quoted((tmp / "c").string()) + " KJIT_CUDA_HOME=" +
                                          quoted(toolkit.string()));
    CHECK(fake.at("nvrtc_version") == "41.7");
    CHECK(kept_answers(tmp).size() == 2);

    // The first library back (the same file): its kept answer names it again, and the hit opens nothing.
    std::filesystem::remove(lib);
    std::filesystem::create_symlink(real, lib);
    const Traced back = ptx_traced(tmp, toolkit, tmp / "k.cu");
    CHECK(back.code == 0);
    CHECK(back.ptx == first.ptx);
    CHECK_MESSAGE(back.nvrtc_inits() == 0, back.trace.substr(0, 4000));
  }

  TEST_CASE("the loader's libnvrtc found on LD_LIBRARY_PATH is kept by its identity and asked again when it changes") {
    const nlohmann::json plain = info_with("");
    const std::filesystem::path real = plain.at("nvrtc_library").get<std::string>();
    kjit::test::TempDir tmp;
    std::filesystem::create_directories(tmp / "lib");
    const auto lib = tmp / "lib" / real.filename();
    std::filesystem::create_symlink(real, lib);
    const std::string env = "LD_LIBRARY_PATH=" + quoted((tmp / "lib").string());
    std::mt19937_64 rng(std::random_device{}());
    kjit::test::write_file(tmp / "k.cu", "__global__ void on_path(int* p) { *p = " + std::to_string(rng() % 100000 + 7) + "; }\n");

    const Traced first = ptx_traced_with(tmp, env, tmp / "k.cu");
    REQUIRE_MESSAGE(first.code == 0, first.trace.substr(0, 4000));
    CHECK_MESSAGE(first.trace.find("calling init: " + lib.string()) != std::string::npos, first.trace.substr(0, 4000));
    const auto answers = kept_answers(tmp);
    REQUIRE(answers.size() == 1);
    // The walk stops at the file the loader takes: LD_LIBRARY_PATH's comes before the loader's cache.
    const std::string kept = kjit::test::read_file(answers[0]);
    CHECK(kept.find("loader\n") != std::string::npos);
    CHECK(kept.find(lib.string() + " ") != std::string::npos);
    CHECK(kept.find("/etc/ld.so.cache") == std::string::npos);

    const Traced hit = ptx_traced_with(tmp, env, tmp / "k.cu");
    CHECK(hit.code == 0);
    CHECK(hit.ptx == first.ptx);
    CHECK_MESSAGE(hit.nvrtc_inits() == 0, hit.trace.substr(0, 4000));

    // Another NVRTC in its place (version 41.7): asked again, another key, compiled, and it fails.
    replace_with_fake(lib);
    check_compiled_by_fake(ptx_traced_with(tmp, env, tmp / "k.cu"));
    // And without it on the path the loader's own NVRTC answers, kept apart.
    std::filesystem::remove(lib);
    const Traced elsewhere = ptx_traced_with(tmp, env, tmp / "k.cu");
    CHECK(elsewhere.code == 0);
    CHECK(elsewhere.ptx == first.ptx);
  }

  TEST_CASE("a kept NVRTC answer that the library contradicts stops the compile and is removed") {
    const nlohmann::json plain = info_with("");
    const std::filesystem::path real = plain.at("nvrtc_library").get<std::string>();
    const std::filesystem::path include = plain.at("toolkit_include_dirs").back().get<std::string>();
    kjit::test::TempDir tmp;
    const auto toolkit = fake_toolkit(tmp, "toolkit", include);
    std::filesystem::create_symlink(real, toolkit / "lib64" / real.filename());
    std::mt19937_64 rng(std::random_device{}());
    kjit::test::write_file(tmp / "a.cu", "__global__ void a(int* p) { *p = " + std::to_string(rng() % 1000 + 1) + "; }\n");
    kjit::test::write_file(tmp / "b.cu", "__global__ void b(int* p) { *p = " + std::to_string(rng() % 1000 + 2000) + "; }\n");
    REQUIRE(ptx_traced(tmp, toolkit, tmp / "a.cu").code == 0);
    const auto answers = kept_answers(tmp);
    REQUIRE(answers.size() == 1);
    // As if the library had changed in a way its identity does not show: the answer says 12.4.
    std::string text = kjit::test::read_file(answers[0]);
    const std::size_t at = text.find("version ");
    REQUIRE(at != std::string::npos);
    text.replace(at, text.find('\n', at) - at, "version 12 4");
    std::filesystem::remove(answers[0]);
    kjit::test::write_file(answers[0], text);
    std::filesystem::permissions(answers[0], std::filesystem::perms(0644));

    const Traced contradicted = ptx_traced(tmp, toolkit, tmp / "b.cu");  // a miss: NVRTC opened, and it says otherwise
    CHECK(contradicted.code != 0);
    CHECK(contradicted.ptx.find(".entry") == std::string::npos);
    CHECK_MESSAGE(contradicted.trace.find("is version " + plain.at("nvrtc_version").get<std::string>() +
                                          ", and this process's cache keys were made with 12.4") != std::string::npos,
                  contradicted.trace.substr(contradicted.trace.size() > 3000 ? contradicted.trace.size() - 3000 : 0));
    CHECK_FALSE(std::filesystem::exists(answers[0]));
    const Traced again = ptx_traced(tmp, toolkit, tmp / "b.cu");
    CHECK(again.code == 0);
    CHECK(again.ptx.find(".entry") != std::string::npos);
  }

  TEST_CASE("libkjit records no libnvrtc: NVRTC is opened at its first use") {
    const auto libs = kjit::test::run_command("readelf -d " + quoted(std::string(KJIT_BINARY_DIR) + "/lib/libkjit.so") +
                                              " 2>&1");
    REQUIRE_MESSAGE(libs.code == 0, libs.out);
    CHECK(libs.out.find("(NEEDED)") != std::string::npos);
    CHECK_MESSAGE(libs.out.find("libnvrtc") == std::string::npos, libs.out);
    CHECK(libs.out.find("libcuda") == std::string::npos);
  }

  TEST_CASE("the toolkit KJIT_CUDA_HOME CUDA_HOME or CUDA_PATH names gives NVRTC and one that does not open is an error") {
    const nlohmann::json plain = info_with("");
    const std::filesystem::path real = plain.at("nvrtc_library").get<std::string>();
    REQUIRE(std::filesystem::exists(real));
    const std::string soname = real.filename().string();  // libnvrtc.so.13
    const std::filesystem::path include = plain.at("toolkit_include_dirs").back().get<std::string>();
    kjit::test::TempDir tmp;

    // A toolkit whose libnvrtc is the real one under its own path: named, it is the one opened.
    const auto named = fake_toolkit(tmp, "named", include);
    std::filesystem::create_symlink(real, named / "lib64" / soname);
    for (const char* variable : {"KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"}) {
      CAPTURE(variable);
      const nlohmann::json j = info_with(std::string(variable) + "=" + quoted(named.string()));
      CHECK(j.at("nvrtc_library").get<std::string>() == (named / "lib64" / soname).string());
      CHECK(j.at("nvrtc_version") == plain.at("nvrtc_version"));
    }

    // One whose libnvrtc cannot be opened (random bytes, an empty file, a folder, a link loop, a
    // link to nothing) is an error naming the file and why, from each variable: never the loader's
    // NVRTC with this toolkit's headers (#57 item 6).
    std::mt19937_64 rng(std::random_device{}());
    std::string junk(4096 + rng() % 4096, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    struct Broken {
      std::string name;
      std::function<void(const std::filesystem::path&)> make;
    };
    const std::vector<Broken> broken{
        {"junk", [&](const std::filesystem::path& f) { kjit::test::write_file(f, junk); }},
        {"empty", [](const std::filesystem::path& f) { kjit::test::write_file(f, ""); }},
        {"folder", [](const std::filesystem::path& f) { std::filesystem::create_directory(f); }},
        {"loop", [](const std::filesystem::path& f) { std::filesystem::create_symlink(f.filename(), f); }},
        {"dangling", [](const std::filesystem::path& f) { std::filesystem::create_symlink("no-such-file", f); }}};
    kjit::test::write_file(tmp / "ok.cu", "extern \"C\" __global__ void ok(int* p) { *p = 1; }\n");
    for (const Broken& b : broken) {
      const auto root = fake_toolkit(tmp, "broken-" + b.name, include);
      const auto file = root / "lib64" / soname;
      b.make(file);
      for (const char* variable : {"KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"}) {
        CAPTURE(b.name);
        CAPTURE(variable);
        const auto r = kjit::test::run_command("env -u KJIT_CUDA_HOME -u CUDA_HOME -u CUDA_PATH KJIT_CACHE_DIR=" +
                                               quoted((tmp / "c").string()) + " " + variable + "=" +
                                               quoted(root.string()) + " " + quoted(k_kjit) + " ptx " +
                                               quoted((tmp / "ok.cu").string()) + " --arch sm_90 2>&1");
        CHECK(r.code == 3);
        CHECK(r.out.find(".entry") == std::string::npos);
        CHECK_MESSAGE(r.out.find(std::string(variable) + "=" + root.string() + " names the CUDA toolkit") !=
                          std::string::npos, r.out);
        CHECK_MESSAGE(r.out.find(file.string()) != std::string::npos, r.out);
        CHECK(r.out.find("cannot be opened") != std::string::npos);
      }
    }
    // One with headers and no libnvrtc at all: the same error, naming the folders looked in.
    const auto empty = fake_toolkit(tmp, "no-nvrtc", include);
    const auto none = kjit::test::run_command("env -u KJIT_CUDA_HOME -u CUDA_HOME -u CUDA_PATH KJIT_CACHE_DIR=" +
                                              quoted((tmp / "c").string()) + " CUDA_HOME=" + quoted(empty.string()) +
                                              " " + quoted(k_kjit) + " ptx " + quoted((tmp / "ok.cu").string()) +
                                              " --arch sm_90 2>&1");
    CHECK(none.code == 3);
    CHECK_MESSAGE(none.out.find("CUDA_HOME=" + empty.string() + " names the CUDA toolkit, and it has no " + soname) !=
                      std::string::npos, none.out);
    CHECK(none.out.find("lib64/, lib/") != std::string::npos);
    // A variable naming a folder that is no toolkit (no include/, no libnvrtc) is passed over.
    std::filesystem::create_directories(tmp / "not-a-toolkit" / "bin");
    const nlohmann::json passed = info_with("CUDA_HOME=" + quoted((tmp / "not-a-toolkit").string()));
    CHECK(passed.at("nvrtc_version") == plain.at("nvrtc_version"));

    // And it compiles with the named one: the PTX of a random kernel.
    const auto value = std::to_string(rng() % 100000);
    kjit::test::write_file(tmp / "k.cu", "__global__ void named_nvrtc(float* p) { p[0] = " + value + ".5f; }\n");
    const auto ptx = kjit::test::run_command("env -u CUDA_HOME -u CUDA_PATH KJIT_CACHE_DIR=" + quoted((tmp / "c").string()) +
                                             " KJIT_CUDA_HOME=" + quoted(named.string()) + " " + quoted(k_kjit) +
                                             " ptx " + quoted((tmp / "k.cu").string()) + " --arch sm_90");
    CHECK(ptx.code == 0);
    CHECK(ptx.out.find(".entry") != std::string::npos);
    CHECK(ptx.out.find("named_nvrtc") != std::string::npos);
  }
}
