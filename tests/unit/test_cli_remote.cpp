// The remote tier end to end, through real kjit processes and a real redis-server: a fresh
// machine's first hit comes from the fleet and is written to its disk; 16 machines compile each
// kernel once; a killed, paused and restarted Redis fails no request; a read-only consumer
// writes nothing; with a secret, an unsigned value is never loaded; and the local trust cases,
// tried as an attacker would, with two unprivileged users (when the tests run as root).
#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Run = kjit::test::CommandResult;

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

std::string kernel_source(int i) {
  return "extern \"C\" __global__ void r" + std::to_string(i) +
         "(float* x, int n) {\n  int j = blockIdx.x * blockDim.x + threadIdx.x;\n  if (j < n) x[j] = x[j] * " +
         std::to_string(i + 3) + ".0f - 2.0f;\n}\n";
}

// Writes n kernels into dir; returns their paths joined by spaces.
std::string write_kernels(const kjit::test::TempDir& dir, int n) {
  std::string files;
  for (int i = 0; i < n; ++i) {
    auto f = dir / fmt::format("r{}.cu", i);
    kjit::test::write_file(f, kernel_source(i));
    files += " " + f.string();
  }
  return files;
}

// `kjit ARGS` with KJIT_REMOTE_CACHE and the given extra environment; stderr into `err` when set.
Run kjit_remote(const std::string& url, const std::string& env, const std::string& args, const std::string& err = {}) {
  return kjit::test::run_command(fmt::format("KJIT_REMOTE_CACHE='{}' {} {} {} 2>{}", url, env, k_kjit, args,
                                             err.empty() ? "/dev/null" : err));
}

nlohmann::json parse_array(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE((!j.is_discarded() && j.is_array()), r.out);
  return j;
}

std::map<std::string, int> outcome_counts(const nlohmann::json& results) {
  std::map<std::string, int> counts;
  for (const auto& j : results) counts[j.value("outcome", std::string("error"))]++;
  return counts;
}

}  // namespace

TEST_SUITE("cli remote") {
  TEST_CASE("a miss is compiled and sent then a fresh machine hits the remote and then its own disk") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const std::string files = write_kernels(dir, 3);
    const std::string a = "--cache-dir " + (dir / "a").string(), b = "--cache-dir " + (dir / "b").string();

    auto first = parse_array(kjit_remote(redis.url(), "", a + " compile --json --arch sm_90" + files));
    CHECK(outcome_counts(first)["compiled"] == 3);
    CHECK(redis.keys("kjit:*").size() == 3);  // sent before the process ended; locks released

    auto second = parse_array(kjit_remote(redis.url(), "", b + " compile --json --arch sm_90 -o " +
                                                            (dir / "out").string() + files));
    CHECK(outcome_counts(second)["remote_hit"] == 3);
    for (int i = 0; i < 3; ++i) CHECK(second[i]["key"] == first[i]["key"]);
    CHECK(kjit::test::read_file(dir / "out/r1.ptx").find("0f40800000") != std::string::npos);  // r1: * 4.0f

    auto third = parse_array(kjit_remote(redis.url(), "", b + " compile --json --arch sm_90" + files));
    CHECK(outcome_counts(third)["hit"] == 3);  // backfilled: the disk answers now

    auto stats = nlohmann::json::parse(kjit_remote(redis.url(), "", b + " --json cache stats").out);
    CHECK(stats["remote"]["hits"] == 3);
    CHECK(stats["remote"]["requests"] == 3);
    CHECK(stats["compiles"] == 0);
    Run verify = kjit_remote(redis.url(), "", b + " --json cache verify");
    CHECK(verify.code == 0);
    CHECK(nlohmann::json::parse(verify.out)["ok"] == 3);
  }

  TEST_CASE("Runtime::stats counts the remote tier of this process") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    kjit::Program p("stats.cu", kernel_source(7));
    const kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    {
      auto c = kjit::test::quiet_config(dir / "a");
      c.remote_cache = redis.url();
      kjit::Runtime rt(c);
      CHECK(rt.compile(p, o).outcome == kjit::Outcome::compiled);
      CHECK(rt.stats().remote_misses == 1);
    }  // the destructor sends what is queued
    auto c = kjit::test::quiet_config(dir / "b");
    c.remote_cache = redis.url();
    kjit::Runtime rt(c);
    const kjit::CompileResult r = rt.compile(p, o);
    CHECK(r.outcome == kjit::Outcome::remote_hit);
    CHECK(r.has_cubin());
    const kjit::RuntimeStats s = rt.stats();
    CHECK(s.remote_requests == 1);
    CHECK(s.remote_hits == 1);
    CHECK(s.remote_misses == 0);
    CHECK(s.remote_bytes_read > r.cubin.size());
    CHECK(s.remote_latency_us > 0);
    CHECK(s.remote_errors == 0);
    CHECK(s.misses == 0);
    CHECK(s.compiles == 0);
  }

  TEST_CASE("16 machines with their own disks and one Redis compile each of 20 kernels once") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const std::string files = write_kernels(dir, 20);
    std::vector<FILE*> procs;
    for (int p = 0; p < 16; ++p) {
      // A generous timeout: 16 processes and Redis share two cores here.
      std::string cmd = fmt::format("KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=5s {} --cache-dir {} compile "
                                    "--json --arch sm_90{} 2>/dev/null",
                                    redis.url(), k_kjit, (dir / fmt::format("node{}", p)).string(), files);
      procs.push_back(popen(cmd.c_str(), "r"));
      REQUIRE(procs.back() != nullptr);
    }
    std::map<std::string, std::map<std::string, int>> outcomes;  // key -> outcome -> count
    int failures = 0;
    for (FILE* p : procs) {
      const Run r = kjit::test::finish_command(p);
      const std::string& out = r.out;
      failures += r.code != 0;
      auto all = nlohmann::json::parse(out, nullptr, false);
      REQUIRE_MESSAGE((!all.is_discarded() && all.is_array()), out);
      for (const auto& j : all) outcomes[j["key"].get<std::string>()][j["outcome"].get<std::string>()]++;
    }
    CHECK(failures == 0);
    CHECK(outcomes.size() == 20);
    for (auto& [key, counts] : outcomes) {
      CHECK_MESSAGE(counts["compiled"] == 1, key);  // once in the whole fleet
      CHECK(counts["compiled"] + counts["remote_hit"] + counts["waited"] == 16);
    }
    for (int p = 0; p < 16; ++p) {
      Run verify = kjit::test::run_command(fmt::format("{} --cache-dir {} --json cache verify 2>/dev/null", k_kjit,
                                                       (dir / fmt::format("node{}", p)).string()));
      CHECK(verify.code == 0);
      CHECK(nlohmann::json::parse(verify.out)["ok"] == 20);
    }
    CHECK(redis.keys("kjit:lock:*").empty());
  }

  TEST_CASE("Redis killed paused and restarted mid-run fails no request and leaves nothing corrupt") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const std::string files = write_kernels(dir, 20);
    std::vector<FILE*> procs;
    std::vector<std::chrono::steady_clock::time_point> started;
    auto launch = [&](int p) {
      // Each node compiles the 20 kernels one at a time (a few seconds): Redis changes under it.
      std::string cmd = fmt::format("KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=100ms {} --cache-dir {} compile "
                                    "--json --arch sm_90{} 2>/dev/null",
                                    redis.url(), k_kjit, (dir / fmt::format("node{}", p)).string(), files);
      procs.push_back(popen(cmd.c_str(), "r"));
      REQUIRE(procs.back() != nullptr);
    };
    for (int p = 0; p < 3; ++p) launch(p);
    std::this_thread::sleep_for(400ms);
    redis.pause();  // looks hung: connections accepted, no reply
    std::this_thread::sleep_for(1500ms);
    redis.resume();
    launch(3);
    std::this_thread::sleep_for(400ms);
    redis.kill();
    std::this_thread::sleep_for(800ms);
    redis.restart();  // empty, like a restarted cache without persistence
    launch(4);
    int failures = 0;
    for (FILE* p : procs) {
      const Run r = kjit::test::finish_command(p);
      const std::string& out = r.out;
      failures += r.code != 0;
      auto all = nlohmann::json::parse(out, nullptr, false);
      REQUIRE_MESSAGE((!all.is_discarded() && all.is_array()), out);
      CHECK(all.size() == 20);
      for (const auto& j : all) CHECK_MESSAGE(!j.contains("error"), j.dump());  // every request has its result
    }
    CHECK(failures == 0);
    for (int p = 0; p < 5; ++p) {
      Run verify = kjit::test::run_command(fmt::format("{} --cache-dir {} --json cache verify 2>/dev/null", k_kjit,
                                                       (dir / fmt::format("node{}", p)).string()));
      CHECK(verify.code == 0);
      CHECK(nlohmann::json::parse(verify.out)["damaged"].empty());
    }
    // What Redis holds now is whole: a fresh machine loads every value it finds, rejects none.
    const std::string err = (dir / "fresh.err").string();
    auto fresh = parse_array(kjit_remote(redis.url(), "", "--cache-dir " + (dir / "fresh").string() +
                                                           " compile --json --arch sm_90" + files, err));
    auto counts = outcome_counts(fresh);
    CHECK(counts["remote_hit"] + counts["compiled"] == 20);
    CHECK(kjit::test::read_file(err).find("not loaded") == std::string::npos);
  }

  TEST_CASE("a read-only consumer reads the fleet cache and writes nothing") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const std::string files = write_kernels(dir, 2);
    auto ro = parse_array(kjit_remote(redis.url(), "KJIT_REMOTE_READONLY=1",
                                      "--cache-dir " + (dir / "ro1").string() + " compile --json --arch sm_90" + files));
    CHECK(outcome_counts(ro)["compiled"] == 2);
    CHECK(redis.dbsize() == 0);  // no value, no lock
    auto writer = parse_array(kjit_remote(redis.url(), "", "--cache-dir " + (dir / "w").string() +
                                                            " compile --json --arch sm_90" + files));
    CHECK(outcome_counts(writer)["compiled"] == 2);
    CHECK(redis.dbsize() == 2);
    auto ro2 = parse_array(kjit_remote(redis.url(), "KJIT_REMOTE_READONLY=1",
                                       "--cache-dir " + (dir / "ro2").string() + " compile --json --arch sm_90" + files));
    CHECK(outcome_counts(ro2)["remote_hit"] == 2);
    CHECK(redis.dbsize() == 2);

    // kjit warm --remote: a CI machine without a GPU fills the fleet's cache.
    kjit::test::write_file(dir / "kernels/kjit.json",
                           R"({"kjit_manifest": 1, "kernels": [{"file": "w0.cu"}, {"file": "w1.cu"}]})");
    kjit::test::write_file(dir / "kernels/w0.cu", "extern \"C\" __global__ void w0(float* x) { x[threadIdx.x] *= 5; }\n");
    kjit::test::write_file(dir / "kernels/w1.cu", "extern \"C\" __global__ void w1(int* x) { x[threadIdx.x] += 9; }\n");
    Run warm = kjit::test::run_command(fmt::format("{} --cache-dir {} warm --remote '{}' {} --arch sm_90 2>&1", k_kjit,
                                                   (dir / "ci").string(), redis.url(), (dir / "kernels").string()));
    CHECK_MESSAGE(warm.code == 0, warm.out);
    CHECK(redis.keys("kjit:*").size() == 4);
  }

  TEST_CASE("with a fleet secret an unsigned or foreign value is never loaded") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const std::string files = write_kernels(dir, 2);
    kjit::test::write_file(dir / "secret", "correct horse battery staple\n");
    const std::string secret = "KJIT_REMOTE_SECRET_FILE=" + (dir / "secret").string();
    // A node without the secret writes unsigned values.
    auto plain = parse_array(kjit_remote(redis.url(), "", "--cache-dir " + (dir / "plain").string() +
                                                           " compile --json --arch sm_90" + files));
    REQUIRE(outcome_counts(plain)["compiled"] == 2);
    const std::string err = (dir / "signed.err").string();
    auto signed_run = parse_array(kjit_remote(redis.url(), secret, "--cache-dir " + (dir / "signed").string() +
                                                                       " compile --json --arch sm_90" + files, err));
    CHECK(outcome_counts(signed_run)["compiled"] == 2);  // not remote_hit: unsigned values refused
    CHECK(kjit::test::read_file(err).find("carries no signature") != std::string::npos);
    // Its signed values load on another node with the secret...
    auto signed2 = parse_array(kjit_remote(redis.url(), secret, "--cache-dir " + (dir / "signed2").string() +
                                                                    " compile --json --arch sm_90" + files));
    CHECK(outcome_counts(signed2)["remote_hit"] == 2);
    // ...and a value moved under another key is refused though its tag is valid.
    const std::string k0 = signed2[0]["key"], k1 = signed2[1]["key"];
    redis.set("kjit:" + k1, *redis.get("kjit:" + k0));
    auto moved = parse_array(kjit_remote(redis.url(), secret, "--cache-dir " + (dir / "signed3").string() +
                                                                  " compile --json --arch sm_90 " +
                                                                  (dir / "r1.cu").string()));
    CHECK(moved[0]["outcome"] == "compiled");
    // A missing secret file is a usage error, said before anything runs.
    Run missing = kjit_remote(redis.url(), "KJIT_REMOTE_SECRET_FILE=/nonexistent/secret",
                              "--cache-dir " + (dir / "x").string() + " compile --arch sm_90" + files);
    CHECK(missing.code == 2);
  }

  TEST_CASE("kjit cache remote ping answers for a live server and exits 1 for a dead one") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    Run ok = kjit::test::run_command(fmt::format("{} --cache-dir {} --json cache remote ping --remote '{}'", k_kjit,
                                                 (dir / "c").string(), redis.url()));
    CHECK(ok.code == 0);
    auto j = nlohmann::json::parse(ok.out);
    CHECK(j["ok"] == true);
    CHECK(j["server"].get<std::string>().rfind("redis ", 0) == 0);
    redis.kill();
    Run down = kjit::test::run_command(fmt::format("{} --cache-dir {} --json cache remote ping --remote '{}'",
                                                   k_kjit, (dir / "c").string(), redis.url()));
    CHECK(down.code == 1);
    CHECK(nlohmann::json::parse(down.out)["ok"] == false);
    Run bad = kjit::test::run_command(fmt::format("{} --cache-dir {} cache remote ping --remote ftp://x 2>&1", k_kjit,
                                                  (dir / "c").string()));
    CHECK(bad.code == 2);
    CHECK(bad.out.find("expected redis://") != std::string::npos);
  }
}

// ---- the local trust cases, as an attacker would try them ------------------------------------

namespace {

constexpr uid_t k_attacker = 40001, k_victim = 40002;  // no passwd entries: no home directory

// Runs kjit as `uid` (group `uid`, no supplementary groups) with only PATH and TMPDIR set, as a
// container user without a passwd entry; stdout and stderr go to the given files. Exit status.
// A user to run kjit as: uid, primary group (the uid's own when 0), supplementary groups, umask.
struct User {
  uid_t uid;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  mode_t umask = 022;
};

int run_user(const User& user, const std::string& tmpdir, const std::vector<std::string>& args, const std::string& out,
             const std::string& err, const std::string& cache_dir = {}, const std::vector<std::string>& extra_env = {}) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) ::_exit(125);
    ::dup2(o, 1);
    ::dup2(e, 2);
    const gid_t gid = user.gid != 0 ? user.gid : user.uid;
    if (::setgroups(user.groups.size(), user.groups.data()) != 0 || ::setgid(gid) != 0 || ::setuid(user.uid) != 0) {
      ::_exit(124);
    }
    ::umask(user.umask);
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "TMPDIR=" + tmpdir};
    if (!cache_dir.empty()) env.push_back("KJIT_CACHE_DIR=" + cache_dir);
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv{const_cast<char*>(k_kjit.c_str())}, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& v : env) envp.push_back(const_cast<char*>(v.c_str()));
    envp.push_back(nullptr);
    ::execve(k_kjit.c_str(), argv.data(), envp.data());
    ::_exit(126);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_as(uid_t uid, const std::string& tmpdir, const std::vector<std::string>& args, const std::string& out,
           const std::string& err, const std::string& cache_dir = {}, const std::vector<std::string>& extra_env = {}) {
  return run_user(User{uid}, tmpdir, args, out, err, cache_dir, extra_env);
}

const char* k_victim_source =
    "extern \"C\" __global__ void fill(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = 3.5f;\n}\n";
const char* k_evil_source =
    "extern \"C\" __global__ void fill(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = 666.0f;\n}\n";

}  // namespace

TEST_SUITE("cli trust") {
  TEST_CASE("another user cannot plant a kernel in a victim's temp-dir cache") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: the two-user case needs setuid; run the tests as root (CI does)");
    }
    kjit::test::TempDir base;
    ::chmod(base.path().c_str(), 0755);
    const auto tmp = base / "tmp";  // the machine's shared /tmp
    std::filesystem::create_directory(tmp);
    ::chmod(tmp.c_str(), 01777);
    kjit::test::write_file(base / "src/victim.cu", k_victim_source);
    kjit::test::write_file(base / "src/evil.cu", k_evil_source);
    ::chmod((base / "src").c_str(), 0755);
    const std::string out = (tmp / "out.json").string(), err = (tmp / "err.txt").string();

    // The attacker compiles both sources in a cache of its own: the evil entry, the victim's key.
    const std::string att_cache = (tmp / "attacker-cache").string();
    REQUIRE(run_as(k_attacker, tmp, {"compile", "--json", "--arch", "sm_90", (base / "src/evil.cu").string(),
                                     (base / "src/victim.cu").string()},
                   out, err, att_cache) == 0);
    auto att = nlohmann::json::parse(kjit::test::read_file(out));
    const std::string evil_key = att[0]["key"], victim_key = att[1]["key"];
    // It creates the victim's fallback cache first, writable by all, and plants the evil entry
    // under the victim's key.
    const auto victim_cache = tmp / fmt::format("kjit-cache-{}", k_victim);
    const auto planted = victim_cache / victim_key.substr(0, 2) / (victim_key.substr(2) + ".kjit");
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(k_attacker) != 0 || ::setuid(k_attacker) != 0) ::_exit(1);
      ::umask(0);
      std::error_code ec;
      std::filesystem::create_directories(planted.parent_path(), ec);
      ::chmod(victim_cache.c_str(), 0777);
      ::chmod(planted.parent_path().c_str(), 0777);
      std::filesystem::copy_file(std::filesystem::path(att_cache) / evil_key.substr(0, 2) / (evil_key.substr(2) + ".kjit"),
                                 planted, ec);
      ::_exit(ec ? 2 : 0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WEXITSTATUS(status) == 0);

    // The victim, with no home, compiles its kernel: never the planted one.
    REQUIRE(run_as(k_victim, tmp, {"compile", "--json", "--arch", "sm_90", "-o", (tmp / "victim-out").string(),
                                   (base / "src/victim.cu").string()},
                   out, err) == 0);
    auto victim = nlohmann::json::parse(kjit::test::read_file(out)).at(0);
    CHECK(victim["key"] == victim_key);
    CHECK(victim["outcome"] == "compiled");
    const std::string ptx = kjit::test::read_file(tmp / "victim-out/victim.ptx");
    CHECK(ptx.find("1080033280") != std::string::npos);  // 3.5f, stored as its bits
    CHECK(ptx.find("1143373824") == std::string::npos);  // 666.0f
    const std::string warning = kjit::test::read_file(err);
    CHECK(warning.find(victim_cache.string()) != std::string::npos);
    CHECK(warning.find("not using it") != std::string::npos);
  }

  TEST_CASE("an entry copied under another key in a user's own cache is a miss and never a hit") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "victim.cu", k_victim_source);
    kjit::test::write_file(dir / "evil.cu", k_evil_source);
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    auto first = parse_array(kjit::test::run_command(fmt::format("{} {} compile --json --arch sm_90 -o {} {} {} "
                                                                 "2>/dev/null", k_kjit, cache, (dir / "evil").string(),
                                                                 (dir / "evil.cu").string(), (dir / "victim.cu").string())));
    REQUIRE(kjit::test::read_file(dir / "evil/evil.ptx").find("1143373824") != std::string::npos);  // 666.0f
    const std::string evil_key = first[0]["key"], victim_key = first[1]["key"];
    auto path = [&](const std::string& key) { return dir / "cache" / key.substr(0, 2) / (key.substr(2) + ".kjit"); };
    std::filesystem::copy_file(path(evil_key), path(victim_key), std::filesystem::copy_options::overwrite_existing);
    Run again = kjit::test::run_command(fmt::format("{} {} compile --json --arch sm_90 -o {} {} 2>/dev/null", k_kjit,
                                                    cache, (dir / "out").string(), (dir / "victim.cu").string()));
    auto j = parse_array(again).at(0);
    CHECK(j["outcome"] == "compiled");
    const std::string ptx = kjit::test::read_file(dir / "out/victim.ptx");
    CHECK(ptx.find("1080033280") != std::string::npos);  // 3.5f
    CHECK(ptx.find("1143373824") == std::string::npos);  // 666.0f
  }

  // #30 item 1: with KJIT_CACHE_SHARED=1 the owner check was off, and the victim ran the attacker's PTX.
  TEST_CASE("KJIT_CACHE_SHARED does not let another user plant a kernel in the temp-dir fallback") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: the two-user case needs setuid; run the tests as root (CI does)");
    }
    constexpr uid_t k_team_victim = 54321, k_nobody = 54322;
    kjit::test::TempDir base;
    ::chmod(base.path().c_str(), 0755);
    const auto tmp = base / "tmp";
    std::filesystem::create_directory(tmp);
    ::chmod(tmp.c_str(), 01777);
    kjit::test::write_file(base / "src/v.cu", k_victim_source);
    kjit::test::write_file(base / "src/evil.cu", k_evil_source);
    ::chmod((base / "src").c_str(), 0755);
    const std::string out = (tmp / "out.json").string(), err = (tmp / "err.txt").string();
    const std::string att_cache = (tmp / "attacker-cache").string();
    REQUIRE(run_as(k_nobody, tmp, {"compile", "--json", "--arch", "sm_90", (base / "src/evil.cu").string(),
                                   (base / "src/v.cu").string()},
                   out, err, att_cache) == 0);
    auto att = nlohmann::json::parse(kjit::test::read_file(out));
    const std::string evil_key = att[0]["key"], victim_key = att[1]["key"];
    // "mkdir -m755 $TMPDIR/kjit-cache-54321/<shard>" and the evil entry copied in under the victim's key.
    const auto victim_cache = tmp / fmt::format("kjit-cache-{}", k_team_victim);
    const auto planted = victim_cache / victim_key.substr(0, 2) / (victim_key.substr(2) + ".kjit");
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(k_nobody) != 0 || ::setuid(k_nobody) != 0) ::_exit(1);
      ::umask(022);
      std::error_code ec;
      std::filesystem::create_directories(planted.parent_path(), ec);
      std::filesystem::copy_file(std::filesystem::path(att_cache) / evil_key.substr(0, 2) / (evil_key.substr(2) + ".kjit"),
                                 planted, ec);
      ::_exit(ec ? 2 : 0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WEXITSTATUS(status) == 0);

    REQUIRE(run_as(k_team_victim, tmp, {"compile", "--json", "--arch", "sm_90", "-o", (tmp / "victim-out").string(),
                                        (base / "src/v.cu").string()},
                   out, err, {}, {"KJIT_CACHE_SHARED=1"}) == 0);
    auto victim = nlohmann::json::parse(kjit::test::read_file(out)).at(0);
    CHECK(victim["key"] == victim_key);
    CHECK(victim["outcome"] == "compiled");
    const std::string ptx = kjit::test::read_file(tmp / "victim-out/v.ptx");
    CHECK(ptx.find("1080033280") != std::string::npos);  // 3.5f
    CHECK(ptx.find("1143373824") == std::string::npos);  // 666.0f
    const std::string warning = kjit::test::read_file(err);
    CHECK(warning.find(victim_cache.string()) != std::string::npos);
    CHECK(warning.find("belongs to user 54322") != std::string::npos);
  }

  // #30 item 2: the fallback was followed through another user's link into the victim's own folder.
  TEST_CASE("a temp-dir fallback that is another user's link is refused once and nothing is written through it") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: the two-user case needs setuid; run the tests as root (CI does)");
    }
    constexpr uid_t k_owner = 54321, k_nobody = 54322;
    kjit::test::TempDir base;
    ::chmod(base.path().c_str(), 0755);
    const auto tmp = base / "tmp";
    std::filesystem::create_directory(tmp);
    ::chmod(tmp.c_str(), 01777);
    const auto docs = base / "home/docs";  // the victim's own folder
    std::filesystem::create_directories(docs);
    ::chmod((base / "home").c_str(), 0755);
    ::chmod(docs.c_str(), 0700);
    REQUIRE(::chown(docs.c_str(), k_owner, k_owner) == 0);
    kjit::test::write_file(base / "src/v.cu", k_victim_source);
    ::chmod((base / "src").c_str(), 0755);
    const auto fallback = tmp / fmt::format("kjit-cache-{}", k_owner);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // "ln -s /home/victim/docs $TMPDIR/kjit-cache-54321", as nobody
      if (::setgroups(0, nullptr) != 0 || ::setgid(k_nobody) != 0 || ::setuid(k_nobody) != 0) ::_exit(1);
      ::_exit(::symlink(docs.c_str(), fallback.c_str()) == 0 ? 0 : 2);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WEXITSTATUS(status) == 0);
    const std::string out = (tmp / "out.json").string(), err = (tmp / "err.txt").string();
    for (const char* shared : {"KJIT_CACHE_SHARED=0", "KJIT_CACHE_SHARED=1"}) {
      INFO(shared);
      REQUIRE(run_as(k_owner, tmp, {"compile", "--json", "--arch", "sm_90", (base / "src/v.cu").string()}, out, err, {},
                     {shared}) == 0);
      CHECK(nlohmann::json::parse(kjit::test::read_file(out)).at(0)["outcome"] == "compiled");
      const std::string warning = kjit::test::read_file(err);
      CHECK(warning.find("symbolic link") != std::string::npos);
      std::size_t warnings = 0;
      for (std::size_t at = warning.find("kjit: warn"); at != std::string::npos; at = warning.find("kjit: warn", at + 1)) {
        ++warnings;
      }
      CHECK(warnings == 1);
      CHECK(std::filesystem::is_empty(docs));  // no CACHEDIR.TAG, usage, stats, locks/ or shard
    }
  }

  // #30 item 3: under umask 022 a second member could not store in the first member's shards.
  TEST_CASE("two members of a team cache under umask 022 store in each other's shards and lock") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: the two-user case needs setuid; run the tests as root (CI does)");
    }
    constexpr gid_t k_team = 54400;
    const User a{54321, 54321, {k_team}, 022}, b{54322, 54322, {k_team}, 022};
    kjit::test::TempDir base;
    ::chmod(base.path().c_str(), 0755);
    const auto team = base / "team";
    std::filesystem::create_directory(team);
    REQUIRE(::chown(team.c_str(), 0, k_team) == 0);
    ::chmod(team.c_str(), 02770);
    const auto tmp = base / "tmp";
    std::filesystem::create_directory(tmp);
    ::chmod(tmp.c_str(), 01777);
    const auto src = base / "src";
    std::vector<std::string> files;
    for (int i = 0; i < 4; ++i) {
      kjit::test::write_file(src / fmt::format("k{}.cu", i), kernel_source(i));
      files.push_back((src / fmt::format("k{}.cu", i)).string());
    }
    ::chmod(src.c_str(), 0755);
    const std::string out = (tmp / "out.json").string(), err = (tmp / "err.txt").string();
    // Member a fills the shards and locks/; member b then stores other kernels there.
    std::vector<std::string> args = {"compile", "--json", "--arch", "sm_90", files[0], files[1]};
    REQUIRE(run_user(a, tmp, args, out, err, team.string(), {"KJIT_CACHE_SHARED=1"}) == 0);
    for (const auto& e : std::filesystem::recursive_directory_iterator(team)) {
      struct stat st{};
      REQUIRE(::lstat(e.path().c_str(), &st) == 0);
      INFO(e.path().string());
      CHECK(st.st_gid == k_team);
      if (S_ISDIR(st.st_mode)) CHECK((st.st_mode & 07777) == 02770);
      else CHECK((st.st_mode & 07777) == 0660);
    }
    args = {"compile", "--json", "--arch", "sm_90", files[0], files[1], files[2], files[3]};
    REQUIRE(run_user(b, tmp, args, out, err, team.string(), {"KJIT_CACHE_SHARED=1"}) == 0);
    auto second = nlohmann::json::parse(kjit::test::read_file(out));
    CHECK(second[0]["outcome"] == "hit");
    CHECK(second[1]["outcome"] == "hit");
    const std::string b_err = kjit::test::read_file(err);
    CHECK_MESSAGE(b_err.find("kjit: warn") == std::string::npos, b_err);  // stored, and locked
    // All four stored: member a now hits every one.
    REQUIRE(run_user(a, tmp, args, out, err, team.string(), {"KJIT_CACHE_SHARED=1"}) == 0);
    for (const auto& r : nlohmann::json::parse(kjit::test::read_file(out))) CHECK(r["outcome"] == "hit");
  }

  // #30 item 4: the Redis password was printed in warnings, cache stats --json and cache remote ping --json.
  TEST_CASE("a Redis password never reaches stdout or stderr") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", kernel_source(1));
    const std::string url = "redis://:s3cretPW@127.0.0.1:1";  // nothing listens there: warnings
    const std::string cache = "--cache-dir " + (dir / "c").string();
    for (const std::string& args : {fmt::format("{} compile --arch sm_90 {}", cache, (dir / "k.cu").string()),
                                    cache + " --json cache stats", cache + " --json cache remote ping",
                                    cache + " cache remote ping"}) {
      INFO(args);
      Run r = kjit::test::run_command(fmt::format("KJIT_REMOTE_CACHE='{}' {} {} 2>&1", url, k_kjit, args));
      CHECK(r.out.find("s3cretPW") == std::string::npos);
      CHECK(r.out.find("redis://:***@127.0.0.1:1") != std::string::npos);
    }
    Run bad = kjit::test::run_command(fmt::format("{} {} --remote 'redis://:s3cretPW@host:x' cache remote ping 2>&1",
                                                  k_kjit, cache));
    CHECK(bad.code == 2);
    CHECK(bad.out.find("s3cretPW") == std::string::npos);
  }
}
