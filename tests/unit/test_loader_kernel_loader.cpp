// kjit::KernelLoader: search order, relative includes as NVRTC resolves them (and the cache key
// sees them), program names, errors, and hot reload through compile() (no GPU).
#include <kjit/tools.hpp>
#include <kjit/loader.hpp>

#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <thread>

namespace {


// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

std::string kernel(const std::string& name, const std::string& body = "x[0] = 1.0f;") {
  return "extern \"C\" __global__ void " + name + "(float* x) { " + body + " }\n";
}

const kjit::Arch k_sm90 = kjit::Arch::sm(90);

bool has_key(const std::filesystem::path& cache, const std::string& key) {
  for (const auto& e : kjit::Cache(cache).list()) {
    if (e.key == key) return true;
  }
  return false;
}

// Rewrites a file so that its stat surely changes (size or mtime).
void rewrite(const std::filesystem::path& p, const std::string& content) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kjit::test::write_file(p, content);
}

}  // namespace

TEST_SUITE("KernelLoader") {
  TEST_CASE("KernelLoader: KJIT_KERNEL_PATH comes before API folders which come before the installed kernels") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "env1/both.cu", kernel("from_env"));
    kjit::test::write_file(dir / "api/both.cu", kernel("from_api"));
    kjit::test::write_file(dir / "api/only_api.cu", kernel("only_api"));
    kjit::test::write_file(dir / "env2/only_env2.cu", kernel("only_env2"));
    ScopedEnv env("KJIT_KERNEL_PATH", (dir / "env1").string() + "::" + (dir / "env2").string() + ":" +
                                          (dir / "missing").string());
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader loader({.folders = {dir / "api"}}, rt);
    auto installed = kjit::KernelLoader::installed_kernels_dir();
    REQUIRE(!installed.empty());
    std::vector<std::filesystem::path> expected{dir / "env1", dir / "env2", dir / "api", installed};
    CHECK(loader.search_path() == expected);
    CHECK(loader.find("both.cu").root == dir / "env1");
    CHECK(loader.find("only_api.cu").root == dir / "api");
    CHECK(loader.find("only_env2.cu").root == dir / "env2");
    CHECK(loader.find("kjit.json").root == installed);  // only in the installed kernels_src
    CHECK(loader.compile("both.cu", "", k_sm90).ptx.find("from_env") != std::string::npos);

    kjit::KernelLoader no_env({.folders = {dir / "api"}, .use_environment = false, .use_installed = false}, rt);
    CHECK(no_env.search_path() == std::vector<std::filesystem::path>{dir / "api"});
    CHECK(no_env.compile("both.cu", "", k_sm90).ptx.find("from_api") != std::string::npos);
  }

  TEST_CASE("KernelLoader: a file not on the search path names every folder searched") {
    kjit::test::TempDir dir;
    std::filesystem::create_directories(dir / "a");
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader loader({.folders = {dir / "a", dir / "nope"}, .use_environment = false, .use_installed = false}, rt);
    try {
      loader.compile("gone.cu", "", k_sm90);
      FAIL("no error");
    } catch (const kjit::IoError& e) {
      std::string w = e.what();
      CHECK(w.find("gone.cu") != std::string::npos);
      CHECK(w.find((dir / "a").string()) != std::string::npos);
      CHECK(w.find((dir / "nope").string() + " (folder, missing)") != std::string::npos);
    }
    CHECK_THROWS_AS(loader.compile("/abs/x.cu", "", k_sm90), kjit::UsageError);
  }

  TEST_CASE("KernelLoader: quoted includes resolve next to the including file then along the search path") {
    kjit::test::TempDir dir;
    // nn/gelu.cu includes "act.cuh": nn/act.cuh wins over root/act.cuh; "shared.cuh" exists only
    // in a second search root; nn/act.cuh includes "deep.cuh", found next to it.
    kjit::test::write_file(dir / "root/nn/gelu.cu",
                           "#include \"act.cuh\"\n#include \"shared.cuh\"\n"
                           "extern \"C\" __global__ void gelu(float* x) { x[0] = ACT_VALUE + SHARED_VALUE + DEEP; }\n");
    kjit::test::write_file(dir / "root/nn/act.cuh", "#include \"deep.cuh\"\n#define ACT_VALUE 1234.0f\n");
    kjit::test::write_file(dir / "root/nn/deep.cuh", "#define DEEP 0.5f\n");
    kjit::test::write_file(dir / "root/act.cuh", "#error the root act.cuh is shadowed by nn/act.cuh\n");
    kjit::test::write_file(dir / "second/shared.cuh", "#define SHARED_VALUE 1.0f\n");
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader loader({.folders = {dir / "root", dir / "second"}, .use_environment = false,
                               .use_installed = false}, rt);
    auto [program, options] = loader.request("nn/gelu.cu");
    CHECK(program.name() == "nn/gelu.cu");  // the path relative to its root
    CHECK(program.directory() == dir / "root/nn");
    auto first = loader.compile("nn/gelu.cu", "", k_sm90);
    CHECK(first.outcome == kjit::Outcome::compiled);
    CHECK(first.program_name == "nn/gelu.cu");
    CHECK(first.ptx.find("1150971904") != std::string::npos);  // 1235.5f (0x449A7000): ACT_VALUE + SHARED_VALUE + DEEP

    // The key follows the headers NVRTC read (nn/deep.cuh), not the shadowed root/act.cuh.
    kjit::test::write_file(dir / "root/act.cuh", "#error still shadowed\n// changed\n");
    CHECK(kjit::KernelLoader({.folders = {dir / "root", dir / "second"}, .use_environment = false,
                              .use_installed = false}, rt)
              .compile("nn/gelu.cu", "", k_sm90).key == first.key);
    kjit::test::write_file(dir / "root/nn/deep.cuh", "#define DEEP 1.5f\n");
    auto second = kjit::KernelLoader({.folders = {dir / "root", dir / "second"}, .use_environment = false,
                                      .use_installed = false}, rt)
                      .compile("nn/gelu.cu", "", k_sm90);
    CHECK(second.key != first.key);
    CHECK(second.outcome == kjit::Outcome::compiled);
  }

  TEST_CASE("KernelLoader: manifest variants reach NVRTC and compile errors name the real file and line") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [
      {"file": "sub/blk.cu", "options": {"include_dirs": ["inc"]},
       "variants": [{"name": "b128", "defines": ["BLOCK=128"]}, {"name": "b256", "defines": ["BLOCK=256"]}]}]})");
    kjit::test::write_file(dir / "k/inc/value.cuh", "#define VALUE 3\n");
    kjit::test::write_file(dir / "k/sub/blk.cu", "#include \"value.cuh\"\nextern \"C\" __global__ void blk(int* x) "
                                                 "{ x[0] = BLOCK * VALUE; }\n");
    kjit::test::write_file(dir / "k/sub/bad.cu", "// line 1\n// line 2\nextern \"C\" __global__ void bad(int* x) "
                                                 "{ x[0] = nope; }\n");
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader loader({.folders = {dir / "k"}, .use_environment = false, .use_installed = false}, rt);
    auto def = loader.compile("sub/blk.cu", "", k_sm90);   // the first variant
    auto b128 = loader.compile("sub/blk.cu", "b128", k_sm90);
    auto b256 = loader.compile("sub/blk.cu", "b256", k_sm90);
    CHECK(def.key == b128.key);
    CHECK(b128.key != b256.key);
    CHECK(b128.ptx.find("384") != std::string::npos);  // 128 * 3
    CHECK(b256.ptx.find("768") != std::string::npos);  // 256 * 3
    try {
      loader.compile("sub/blk.cu", "b512", k_sm90);
      FAIL("no error");
    } catch (const kjit::UsageError& e) {
      CHECK(std::string(e.what()).find("b128, b256") != std::string::npos);
    }
    CHECK_THROWS_AS(loader.compile("sub/bad.cu", "v", k_sm90), kjit::UsageError);  // no entry: only ""
    try {
      loader.compile("sub/bad.cu", "", k_sm90);
      FAIL("no error");
    } catch (const kjit::CompileError& e) {
      CHECK(e.program() == "sub/bad.cu");
      CHECK(e.log().find("sub/bad.cu(3): error") != std::string::npos);
      CHECK(e.excerpt().find(">    3 |") != std::string::npos);
    }
  }

  TEST_CASE("KernelLoader: hot reload recompiles after a header edit and keeps the old entry") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k/hot.cu", "#include \"value.cuh\"\nextern \"C\" __global__ void hot(int* x) "
                                             "{ x[0] = VALUE; }\n");
    kjit::test::write_file(dir / "k/value.cuh", "#define VALUE 111\n");
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader hot({.folders = {dir / "k"}, .use_environment = false, .use_installed = false,
                            .hot_reload = true}, rt);
    kjit::KernelLoader cold({.folders = {dir / "k"}, .use_environment = false, .use_installed = false}, rt);
    CHECK(hot.hot_reload());
    CHECK_FALSE(cold.hot_reload());
    auto a = hot.compile("hot.cu", "", k_sm90);
    CHECK(a.outcome == kjit::Outcome::compiled);
    CHECK(cold.compile("hot.cu", "", k_sm90).key == a.key);
    CHECK(hot.compile("hot.cu", "", k_sm90).outcome == kjit::Outcome::hit);  // nothing changed

    rewrite(dir / "k/value.cuh", "#define VALUE 222\n");
    auto b = hot.compile("hot.cu", "", k_sm90);
    CHECK(b.key != a.key);
    CHECK(b.outcome == kjit::Outcome::compiled);
    CHECK(b.ptx.find("222") != std::string::npos);
    CHECK(has_key(dir / "cache", a.key));  // the old text's entry stays
    CHECK(has_key(dir / "cache", b.key));

    // A touch without a content change recompiles nothing; an edit of the kernel file does.
    rewrite(dir / "k/value.cuh", "#define VALUE 222\n");
    CHECK(hot.compile("hot.cu", "", k_sm90).key == b.key);
    rewrite(dir / "k/hot.cu", "#include \"value.cuh\"\nextern \"C\" __global__ void hot(int* x) { x[0] = VALUE + 1; }\n");
    auto c = hot.compile("hot.cu", "", k_sm90);
    CHECK(c.key != b.key);
    CHECK(c.ptx.find("223") != std::string::npos);
    // Off: the loader keeps the source it read (no stat, no read); the headers' content is
    // still hashed by every compile, so it compiles the old kernel text with the new header.
    CHECK(cold.compile("hot.cu", "", k_sm90).key == b.key);

    // So does an edit of the manifest.
    rewrite(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [{"file": "hot.cu", "options": {"defines": ["VALUE2"]}}]})");
    auto d = hot.compile("hot.cu", "", k_sm90);
    CHECK(d.key != c.key);
  }

  TEST_CASE("KernelLoader: hot reload sees a new file that shadows the header or kernel file it read") {
    // k/hot.cu includes "value.cuh", found in the second search root; a value.cuh made next to
    // hot.cu, and then a hot.cu in an earlier search root, take over, as they do for NVRTC.
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k/hot.cu", "#include \"value.cuh\"\nextern \"C\" __global__ void hot(int* x) "
                                             "{ x[0] = VALUE; }\n");
    kjit::test::write_file(dir / "second/value.cuh", "#define VALUE 111\n");
    std::filesystem::create_directories(dir / "first");  // on the search path, empty for now
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader hot({.folders = {dir / "first", dir / "k", dir / "second"}, .use_environment = false,
                            .use_installed = false, .hot_reload = true}, rt);
    auto a = hot.compile("hot.cu", "", k_sm90);
    CHECK(a.ptx.find("111") != std::string::npos);
    CHECK(hot.compile("hot.cu", "", k_sm90).key == a.key);

    kjit::test::write_file(dir / "k/value.cuh", "#define VALUE 222\n");  // next to hot.cu: searched first
    auto b = hot.compile("hot.cu", "", k_sm90);
    CHECK(b.key != a.key);
    CHECK(b.ptx.find("222") != std::string::npos);

    kjit::test::write_file(dir / "first/hot.cu", "extern \"C\" __global__ void hot(int* x) { x[0] = 333; }\n");
    auto c = hot.compile("hot.cu", "", k_sm90);
    CHECK(c.key != b.key);
    CHECK(c.ptx.find("333") != std::string::npos);
    CHECK(hot.compile("hot.cu", "", k_sm90).key == c.key);  // and settles there
  }

  TEST_CASE("KernelLoader: KJIT_HOT_RELOAD turns hot reload on") {
    ScopedEnv env("KJIT_HOT_RELOAD", "1");
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    CHECK(kjit::KernelLoader({}, rt).hot_reload());
    CHECK_FALSE(kjit::KernelLoader({.use_environment = false}, rt).hot_reload());
  }
}
