// kjit cache export | import | keygen through the real kjit: a bundle exported from one cache and
// imported into an empty one answers every request from the disk (no compile), tuning decisions
// included; a truncated, bit-flipped, re-signed or partial bundle is refused whole (exit 1, the
// cache unchanged); an import SIGKILLed at random moments leaves `kjit cache verify` clean and the
// next import reports the earlier one and finishes it; keygen never replaces a key; a bundle kept in
// the fleet's HTTP store (a real nginx with WebDAV PUT) imports on a public-key node, and one
// altered there, absent, or behind credentials the node lacks imports nothing.
#include "core/cache/store.hpp"
#include "core/tune/decision.hpp"
#include "support/helpers.hpp"
#include "support/http_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <kjit/tools/cache.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

struct Run {
  int code = -1;
  std::string out, err;
};

// `ENV kjit --cache-dir CACHE ARGS`, stdout and stderr.
Run kjit_in(const kjit::test::TempDir& dir, const fs::path& cache, const std::string& args, const std::string& env = {}) {
  const fs::path err = dir / "stderr.txt";
  auto r = kjit::test::run_command(fmt::format("{} {} --cache-dir {} {} 2>{}", env, k_kjit, cache.string(), args,
                                               err.string()));
  return {r.code, r.out, kjit::test::read_file(err)};
}

nlohmann::json json_of(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.out << r.err);
  return j;
}

std::string kernel_source(int i) {
  return fmt::format("extern \"C\" __global__ void b{}(float* x, int n) {{\n  int j = blockIdx.x * blockDim.x + "
                     "threadIdx.x;\n  if (j < n) x[j] = x[j] * {}.0f + 1.0f;\n}}\n",
                     i, i + 2);
}

// Every file under `dir` but lock files, with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().parent_path().filename() == "locks") continue;
    out[fs::relative(e.path(), dir).string()] = kjit::test::read_file(e.path());
  }
  return out;
}

std::uint64_t seed_of_test() {
  static const std::uint64_t seed = std::random_device{}();
  return seed;
}

}  // namespace

TEST_SUITE("cli bundle") {
  TEST_CASE("an export imported into an empty cache answers every request from the disk with no compile") {
    kjit::test::TempDir dir;
    const fs::path ci = dir / "ci", node = dir / "node";
    // CI: 12 kernels for sm_90, 3 for sm_80, and a tuner's decision.
    std::vector<kjit::Program> programs;
    {
      kjit::Runtime rt(kjit::test::quiet_config(ci));
      for (int i = 0; i < 12; ++i) {
        programs.emplace_back(fmt::format("b{}.cu", i), kernel_source(i));
        REQUIRE(rt.compile(programs.back(), {.arch = kjit::Arch::sm(90)}).outcome == kjit::Outcome::compiled);
      }
      for (int i = 0; i < 3; ++i) rt.compile(programs[i], {.arch = kjit::Arch::sm(80)});
    }
    {
      kjit::cache::Store store(kjit::cache::StoreConfig{ci.string()});
      kjit::tune::Decision d;
      d.chosen = 1;
      d.labels = {"block 128", "block 256"};
      d.median_us = {3.5, 2.25};
      d.why_not = {"", ""};
      d.device = "NVIDIA H100";
      d.name = "b0.cu: b0";
      d.tuning_key = "n=1048576";
      const kjit::cache::Key key = kjit::test::test_key(4242);
      REQUIRE(store.put_bytes(key, kjit::tune::encode_decision(key, d)).stored);
    }
    Run keygen = kjit_in(dir, ci, "cache keygen --out " + (dir / "ci-key").string());
    REQUIRE_MESSAGE(keygen.code == 0, keygen.err);
    CHECK(keygen.out.rfind("ed25519:", 0) == 0);
    const std::string signing = "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci-key.key").string();
    const std::string public_key = "KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "ci-key.pub").string();

    const std::string bundle = (dir / "warm.kjb").string();
    Run exported = kjit_in(dir, ci, "--json cache export --arch sm_90 " + bundle, signing);
    REQUIRE_MESSAGE(exported.code == 0, exported.err);
    auto e = json_of(exported);
    CHECK(e["bundle"]["entries"] == 13);  // 12 for sm_90 and the decision; not the sm_80 ones
    CHECK(e["bundle"]["signature"] == "ed25519");
    CHECK(e["bundle"]["toolkit"] == kjit::nvrtc_version());
    CHECK(e["file_size"] == fs::file_size(bundle));

    Run imported = kjit_in(dir, node, "--json cache import " + bundle, public_key);
    REQUIRE_MESSAGE(imported.code == 0, imported.err);
    auto im = json_of(imported);
    CHECK(im["written"] == 13);
    CHECK(im["present"] == 0);
    CHECK(im["earlier"].is_null());
    CHECK(im["bundle"]["generation"] == e["bundle"]["generation"]);

    // The node: every request a disk hit, nothing compiled, nothing missed.
    kjit::Runtime rt(kjit::test::quiet_config(node));
    for (const auto& p : programs) {
      const kjit::CompileResult r = rt.compile(p, {.arch = kjit::Arch::sm(90)});
      CHECK(r.outcome == kjit::Outcome::hit);
      CHECK(r.has_cubin());
    }
    const kjit::RuntimeStats s = rt.stats();
    CHECK(s.disk_hits == programs.size());
    CHECK(s.compiles == 0);
    CHECK(s.misses == 0);
    const auto decisions = kjit::Cache(node).tuning_decisions();
    REQUIRE(decisions.size() == 1);
    CHECK(decisions[0].name == "b0.cu: b0");
    CHECK(decisions[0].chosen == 1);
    Run verify = kjit_in(dir, node, "--json cache verify");
    CHECK(verify.code == 0);
    CHECK(json_of(verify)["ok"] == 13);

    // Once more: everything is there already. --check imports nothing.
    Run again = kjit_in(dir, node, "--json cache import " + bundle, public_key);
    CHECK(json_of(again)["present"] == 13);
    Run check = kjit_in(dir, dir / "empty", "cache import --check " + bundle, public_key);
    CHECK(check.code == 0);
    CHECK(check.out.find(": ok") != std::string::npos);
    CHECK(kjit::Cache(dir / "empty").list().empty());
  }

  TEST_CASE("a truncated bit-flipped re-signed or partial bundle is refused whole and the cache is unchanged") {
    INFO("seed " << seed_of_test());
    std::mt19937_64 rng(seed_of_test());
    kjit::test::TempDir dir;
    const fs::path ci = dir / "ci", node = dir / "node";
    {
      kjit::cache::Store store(kjit::cache::StoreConfig{ci.string()});
      for (int i = 0; i < 30; ++i) {
        const auto key = kjit::test::test_key(rng());
        store.put(key, kjit::test::test_entry(key, 100 + rng() % 9000));
      }
      kjit::cache::Store target(kjit::cache::StoreConfig{node.string()});
      const auto key = kjit::test::test_key(rng());
      target.put(key, kjit::test::test_entry(key, 777));  // a node's own entry, to be kept as it is
    }
    REQUIRE(kjit_in(dir, ci, "cache keygen --out " + (dir / "ci").string()).code == 0);
    REQUIRE(kjit_in(dir, ci, "cache keygen --out " + (dir / "other").string()).code == 0);
    const std::string public_key = "KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "ci.pub").string();
    const std::string bundle = (dir / "b.kjb").string(), foreign = (dir / "foreign.kjb").string();
    REQUIRE(kjit_in(dir, ci, "cache export " + bundle, "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci.key").string()).code == 0);
    REQUIRE(kjit_in(dir, ci, "cache export " + foreign, "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "other.key").string())
                .code == 0);
    const std::string good = kjit::test::read_file(bundle);
    const auto before = snapshot(node);

    auto refused = [&](const std::string& bytes, const std::string& what, const std::string& env) {
      INFO(what);
      const fs::path bad = dir / "bad.kjb";
      kjit::test::write_file(bad, bytes);
      Run r = kjit_in(dir, node, "--json cache import " + bad.string(), env);
      CHECK(r.code == 1);
      auto j = json_of(r);
      CHECK(j["error"]["message"].get<std::string>().find("refused") != std::string::npos);
      CHECK(snapshot(node) == before);
    };
    refused(good.substr(0, good.size() / 2), "cut in half", public_key);
    refused(good.substr(0, good.size() - 5), "the completion marker cut", public_key);
    refused(good.substr(0, 32 + rng() % 1000), "only the head", public_key);
    for (int i = 0; i < 6; ++i) {
      std::string flipped = good;
      const std::size_t at = rng() % good.size();
      flipped[at] = static_cast<char>(flipped[at] ^ (1 << (rng() % 8)));
      refused(flipped, fmt::format("bit {} flipped", at), public_key);
    }
    refused(kjit::test::read_file(foreign), "signed with another key", public_key);
    refused(good, "signed and no key here", "");
    refused(good, "signed with ed25519 where the fleet secret is the key",
            "KJIT_REMOTE_SECRET_FILE=" + (dir / "ci.pub").string());
    // Partial: the trailer of the whole bundle after only part of its records.
    const std::size_t trailer = 80 + 64;
    const std::size_t manifest = good.size() - trailer - good.rfind("kjit-bundle 1");
    refused(good.substr(0, good.size() / 3) + good.substr(good.size() - trailer - manifest), "partial", public_key);
    // An unsigned bundle where a key is configured.
    const std::string plain = (dir / "plain.kjb").string();
    REQUIRE(kjit_in(dir, ci, "cache export " + plain).code == 0);
    refused(kjit::test::read_file(plain), "unsigned where a key is configured", public_key);
    CHECK(kjit_in(dir, node, "cache import " + bundle, public_key).code == 0);  // and the real one imports
  }

  TEST_CASE("an import SIGKILLed at random moments leaves cache verify clean and the next import finishes it") {
    INFO("seed " << seed_of_test());
    std::mt19937_64 rng(seed_of_test());
    kjit::test::TempDir dir;
    const fs::path ci = dir / "ci", node = dir / "node";
    constexpr int k_entries = 6000;
    {
      kjit::cache::Store store(kjit::cache::StoreConfig{ci.string(), 0});
      for (int i = 0; i < k_entries; ++i) {
        const auto key = kjit::test::test_key(rng());
        REQUIRE(store.put(key, kjit::test::test_entry(key, 500 + rng() % 6000)).stored);
      }
    }
    const std::string env = "KJIT_CACHE_MAX_SIZE=0 KJIT_REMOTE_SECRET_FILE=" + (dir / "secret").string();
    kjit::test::write_file(dir / "secret", "a fleet secret for this test\n");
    const std::string bundle = (dir / "big.kjb").string();
    REQUIRE(kjit_in(dir, ci, "cache export " + bundle, env).code == 0);

    // How long a whole import takes here: kills land anywhere in it.
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(kjit_in(dir, dir / "timing", "cache import " + bundle, env).code == 0);
    const auto whole = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    MESSAGE("a whole import of " << k_entries << " entries took " << whole.count() << " ms");

    int rounds = 0, journals = 0;
    while ((rounds < 6 || journals == 0) && rounds < 30) {
      ++rounds;
      const auto when = std::chrono::milliseconds(whole.count() / 10 + rng() % std::max<long>(1, whole.count() * 9 / 10));
      const pid_t pid = ::fork();
      if (pid == 0) {
        const std::string command = fmt::format("exec env {} {} --cache-dir {} cache import {} >/dev/null 2>&1", env,
                                                k_kjit, node.string(), bundle);
        ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
        ::_exit(127);
      }
      std::this_thread::sleep_for(when);
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      INFO("round " << rounds << ": killed after " << when.count() << " ms");
      journals += fs::exists(node / "import");
      Run verify = kjit_in(dir, node, "--json cache verify");
      CHECK_MESSAGE(verify.code == 0, verify.out << verify.err);
      CHECK(json_of(verify)["damaged"].empty());
      // An import that finished before its kill leaves a full cache, and a later import has little left
      // to do (a kill then lands after it, round after round, on a loaded machine): start the next
      // round from nothing.
      if (WIFEXITED(status) && !fs::exists(node / "import")) fs::remove_all(node);
    }
    REQUIRE_MESSAGE(journals > 0, "no kill landed after the check in " << rounds << " rounds");
    if (!fs::exists(node / "import")) {
      // The last kill came before any write or after the end: kill once more mid-write.
      const pid_t pid = ::fork();
      if (pid == 0) {
        const std::string command = fmt::format("exec env {} {} --cache-dir {} cache import {} >/dev/null 2>&1", env,
                                                k_kjit, node.string(), bundle);
        ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
        ::_exit(127);
      }
      for (int i = 0; i < 2000 && !fs::exists(node / "import"); ++i) std::this_thread::sleep_for(1ms);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    const bool unfinished = fs::exists(node / "import");
    Run last = kjit_in(dir, node, "--json cache import " + bundle, env);
    REQUIRE_MESSAGE(last.code == 0, last.err);
    auto j = json_of(last);
    if (unfinished) {  // the poll above may have lost the race against a fast import
      CHECK(j["resumed"] == true);
      CHECK(j["earlier"]["entries"] == k_entries);
      CHECK(last.err.find("did not finish") != std::string::npos);
    }
    CHECK(j["written"].get<int>() + j["present"].get<int>() == k_entries);
    CHECK_FALSE(fs::exists(node / "import"));
    Run verify = kjit_in(dir, node, "--json cache verify");
    CHECK(verify.code == 0);
    CHECK(json_of(verify)["ok"] == k_entries);
    CHECK(json_of(kjit_in(dir, node, "--json cache stats"))["entries"] == k_entries);  // usage recounted by verify
  }

  TEST_CASE("keygen writes a private key and a public key and never replaces either") {
    kjit::test::TempDir dir;
    const fs::path prefix = dir / "keys/ci";
    fs::create_directories(dir / "keys");
    Run r = kjit_in(dir, dir / "c", "--json cache keygen --out " + prefix.string());
    REQUIRE_MESSAGE(r.code == 0, r.err);
    auto j = json_of(r);
    struct stat st{};
    REQUIRE(::stat((prefix.string() + ".key").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    const std::string pub = kjit::test::read_file(prefix.string() + ".pub");
    CHECK(pub == j["public_key"].get<std::string>() + "\n");
    CHECK(pub.size() == 8 + 64 + 1);
    CHECK(kjit::test::read_file(prefix.string() + ".key").rfind("ed25519-secret:", 0) == 0);
    const std::string key_before = kjit::test::read_file(prefix.string() + ".key");
    Run again = kjit_in(dir, dir / "c", "cache keygen --out " + prefix.string());
    CHECK(again.code == 2);
    CHECK(again.err.find("exists") != std::string::npos);
    CHECK(kjit::test::read_file(prefix.string() + ".key") == key_before);
    // Another pair is another key; a public key file may list both (rotation).
    REQUIRE(kjit_in(dir, dir / "c", "cache keygen --out " + (dir / "keys/next").string()).code == 0);
    CHECK(kjit::test::read_file(dir / "keys/next.pub") != pub);
    // The secret and an ed25519 key together are refused before anything runs.
    kjit::test::write_file(dir / "secret", "s\n");
    Run both = kjit_in(dir, dir / "c", "cache export " + (dir / "x.kjb").string(),
                       "KJIT_REMOTE_SECRET_FILE=" + (dir / "secret").string() +
                           " KJIT_REMOTE_SIGNING_KEY_FILE=" + prefix.string() + ".key");
    CHECK(both.code == 2);
    CHECK(both.err.find("one way") != std::string::npos);
    // A node holding public keys only cannot sign a bundle.
    Run unsigned_export = kjit_in(dir, dir / "c", "cache export " + (dir / "y.kjb").string(),
                                  "KJIT_REMOTE_PUBLIC_KEY_FILE=" + prefix.string() + ".pub");
    CHECK(unsigned_export.code == 2);
    CHECK_FALSE(fs::exists(dir / "y.kjb"));
  }

  TEST_CASE("a bundle kept in the HTTP store imports on a public-key node and an altered or absent one imports nothing") {
    if (kjit::test::NginxServer::binary().empty()) KJIT_SKIP("nginx is not installed (Debian's nginx-light; or set KJIT_NGINX)");
    if (kjit::test::run_command(k_kjit + " cache remote ping --remote http://127.0.0.1:1/x 2>&1").out.find(
            "built without the HTTP store") != std::string::npos) {
      KJIT_SKIP("kjit was built without the HTTP store");
    }
    INFO("seed " << seed_of_test());
    std::mt19937_64 rng(seed_of_test());
    kjit::test::TempDir dir;
    kjit::test::NginxServer nginx(dir / "nginx");
    const fs::path ci = dir / "ci", node = dir / "node";
    constexpr int k_entries = 25;
    {
      kjit::cache::Store store(kjit::cache::StoreConfig{ci.string()});
      for (int i = 0; i < k_entries; ++i) {
        const auto key = kjit::test::test_key(rng());
        REQUIRE(store.put(key, kjit::test::test_entry(key, 300 + rng() % 5000)).stored);
      }
    }
    REQUIRE(kjit_in(dir, ci, "cache keygen --out " + (dir / "ci").string()).code == 0);
    kjit::test::write_file(dir / "auth", std::string(kjit::test::NginxServer::k_user) + ":" +
                                             kjit::test::NginxServer::k_password + "\n");
    // Behind basic auth, as a fleet's store would be; Redis first in the list, as a fleet's is.
    const std::string store_env = fmt::format("KJIT_REMOTE_CACHE='redis://127.0.0.1:1,{}' KJIT_REMOTE_HTTP_AUTH_FILE={}",
                                              nginx.url("auth"), (dir / "auth").string());
    const std::string signing = store_env + " KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci.key").string();
    const std::string public_key = store_env + " KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "ci.pub").string();

    Run exported = kjit_in(dir, ci, "--json cache export --remote-name warm-1 --newer-than 1d", signing);
    REQUIRE_MESSAGE(exported.code == 0, exported.err);
    auto e = json_of(exported);
    CHECK(e["bundle"]["entries"] == k_entries);
    CHECK(e["file"].is_null());
    CHECK(e["remote"].get<std::string>().find("bundle warm-1 in " + nginx.url("auth")) == 0);
    const fs::path stored_dir = nginx.root("auth") / "ac";
    REQUIRE(fs::exists(stored_dir));
    std::vector<fs::path> stored(fs::directory_iterator(stored_dir), {});
    REQUIRE(stored.size() == 1);  // one value: the bundle, under ac/<sha256 of its name>
    CHECK(fs::file_size(stored[0]) == e["file_size"].get<std::uint64_t>());

    Run imported = kjit_in(dir, node, "--json cache import --remote-name warm-1", public_key);
    REQUIRE_MESSAGE(imported.code == 0, imported.err);
    CHECK(json_of(imported)["written"] == k_entries);
    CHECK(json_of(imported)["remote_name"] == "warm-1");
    Run verify = kjit_in(dir, node, "--json cache verify");
    CHECK(json_of(verify)["ok"] == k_entries);

    // Refused or failing, each leaves a fresh node's cache as it was (empty: no entry, no journal).
    auto nothing = [&](const std::string& env, const std::string& args, const std::string& why) {
      INFO(why);
      const fs::path fresh = dir / "fresh";
      Run r = kjit_in(dir, fresh, "--json cache import " + args, env);
      CHECK(r.code == 1);
      CHECK(json_of(r)["error"]["message"].get<std::string>().find(why) != std::string::npos);
      CHECK(kjit::Cache(fresh).list().empty());
      CHECK_FALSE(fs::exists(fresh / "import"));
      CHECK(r.err.find(kjit::test::NginxServer::k_password) == std::string::npos);
      CHECK(r.out.find(kjit::test::NginxServer::k_password) == std::string::npos);
    };
    nothing(public_key, "--remote-name warm-2", "no such bundle");
    nothing(fmt::format("KJIT_REMOTE_CACHE={} KJIT_REMOTE_PUBLIC_KEY_FILE={}", nginx.url("auth"),
                        (dir / "ci.pub").string()),
            "--remote-name warm-1", "401");  // no credentials
    std::string bytes = kjit::test::read_file(stored[0]);
    const std::size_t at = 32 + rng() % (bytes.size() - 200);
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    kjit::test::write_file(stored[0], bytes);
    nothing(public_key, "--remote-name warm-1", "refused");
    // FILE and --remote-name together, or a name that cannot be one: usage.
    CHECK(kjit_in(dir, node, "cache import x.kjb --remote-name warm-1", public_key).code == 2);
    CHECK(kjit_in(dir, node, "cache import --remote-name 'a/b'", public_key).code == 2);
  }
}
