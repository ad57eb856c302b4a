// bench_fleet: a fleet's cold start (#42, "Benchmarks"): N nodes (default 8) start at once, each a
// real `kjit` process (fork + exec of the built CLI) with its own empty disk cache, and compile the
// same K small kernels (default 64, random non-zero constants so that every one is a key of its
// own) for a named arch (sm_90: no GPU needed) with `kjit --json compile --arch ARCH k0.cu ...`.
// Four scenarios, each from cold (empty disk caches, Redis flushed):
//   1. no remote: every node compiles every kernel (N x K NVRTC compiles);
//   2. one Redis (KJIT_REMOTE_CACHE=unix:///.../redis.sock): a kernel is compiled by one node, the
//      others wait for it on the fleet lock or find its value;
//   3. S Redis shards (default 4; KJIT_REMOTE_CACHE=unix:///a.sock,unix:///b.sock,...);
//   4. a bundle imported first: CI compiled the K kernels into a cache of its own and exported it
//      (`kjit cache export`, signed ed25519; made once, before the timed runs); each node runs
//      `kjit cache import` (KJIT_REMOTE_PUBLIC_KEY_FILE) into its empty cache, then the same compile
//      with KJIT_REQUIRE_HIT=1: it must compile nothing. The wall time holds both steps.
// For each: NVRTC compiles summed over the nodes, remote hits, waits (a value another node compiled
// while this one held off on the fleet lock), disk hits, and the wall time from the first fork to
// the last node's exit: the median of --runs (default 3) and its ratio against scenario 1 of the
// same invocation. Scenarios rotate from run to run so that a drift in the machine's load falls on
// each. The counts come from each node's --json answer (one "outcome" a file); `kjit cache stats`
// of each node afterwards gives the runtime counters beside them (a mismatch is printed).
// Redis servers are real redis-server processes (Debian's, or $KJIT_REDIS_SERVER) on unix sockets
// in the work folder (tests/support/redis_server.cpp), stopped at the end. The nodes get this
// process's environment without any KJIT_* variable, plus what their scenario sets (remote nodes:
// KJIT_REMOTE_TIMEOUT=2s, a bound only: a busy machine must not turn a hit into a miss).
// A node that exits non-zero, or one that compiles in scenario 4, makes the benchmark exit 1 with
// a message naming the scenario and node (the work folder is kept for its logs); a setup failure
// exits 2. Usage:
//   bench_fleet [--runs 3] [--nodes 8] [--kernels 64] [--shards 4] [--arch sm_90] [--seed N]
//               [--staggered] [--dir DIR] [--kjit PATH] [--keep]
// --staggered starts node p at kernel p*K/N (as `kjit warm` spreads its warmers); by default every
// node asks for the kernels in the same order, as copies of one program do.
#include "bench_util.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using kjit::bench_util::median;
using kjit::bench_util::now_us;
namespace fs = std::filesystem;

namespace {

// A node failed (exit 1); any other exception is a setup failure (exit 2).
struct NodeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Settings {
  int runs = 3, nodes = 8, kernels = 64, shards = 4;
  std::string arch = "sm_90", dir, kjit = KJIT_CLI_PATH;
  std::uint64_t seed = std::random_device{}();
  bool staggered = false, keep = false;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string load_average() {
  std::istringstream in(read_text("/proc/loadavg"));
  std::string a, b, c;
  in >> a >> b >> c;
  return a.empty() ? "unknown" : fmt::format("{} {} {}", a, b, c);
}

// The last lines of a log, for a failure's message.
std::string tail(const std::string& text, std::size_t lines = 6) {
  std::size_t pos = text.size();
  while (pos > 0 && text[pos - 1] == '\n') --pos;
  std::size_t end = pos;
  for (std::size_t n = 0; pos > 0 && n < lines; ++n) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  std::string out = text.substr(pos, end - pos);
  return out.empty() ? "(nothing on stderr)" : out;
}

// K kernels that differ in their name and in two random constants (never zero), so that each is
// a cache key of its own and NVRTC folds nothing away.
std::vector<std::string> make_kernels(const fs::path& dir, int count, std::uint64_t seed) {
  fs::create_directories(dir);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.5, 4.0), shift(1.0, 100.0);
  std::vector<std::string> files;
  for (int k = 0; k < count; ++k) {
    const fs::path file = dir / fmt::format("fleet_k{}.cu", k);
    const double a = scale(rng), b = shift(rng);  // drawn in this order, so a seed gives the same kernels
    std::ofstream(file) << fmt::format(
        "extern \"C\" __global__ void fleet_k{0}(float* x, const float* y, int n) {{\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float v = x[i], w = y[i];\n"
        "  for (int r = 0; r < 4; ++r) {{ v = tanhf(v * {1:.6f}f) + w; w = w * 0.5f + {2:.6f}f; }}\n"
        "  x[i] = v + w;\n"
        "}}\n",
        k, a, b);
    files.push_back(file.string());
  }
  return files;
}

// This process's environment without any KJIT_* variable: each scenario adds its own.
std::vector<std::string> clean_environment() {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "KJIT_", 5) != 0) out.emplace_back(*e);
  }
  return out;
}

// One process of a node: kjit's arguments, its environment, where its output goes.
struct Step {
  std::string what;  // "compile", "import", ...
  std::vector<std::string> args, env;
  fs::path out, err;
};

// fork + exec of kjit for one step, stdout and stderr into its files. Everything the child needs
// is made before fork().
pid_t spawn(const std::string& kjit, const Step& step) {
  std::vector<std::string> argv_text = {kjit};
  argv_text.insert(argv_text.end(), step.args.begin(), step.args.end());
  std::vector<std::string> env_text = step.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int out = ::open(step.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open(step.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    const int open_errno = errno;
    if (out >= 0) ::close(out);
    throw std::runtime_error(fmt::format("opening {}: {}", (out < 0 ? step.out : step.err).string(),
                                         std::strerror(open_errno)));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(out);
  ::close(err);
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(fork_errno)));
  return pid;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "stopped";
}

// Runs every node's steps, the nodes at once and each node's steps one after another; returns
// the wall time in ms from the first fork to the last exit. A child that is not a node's (a
// redis-server that died meanwhile) is reaped and ignored: its scenario's nodes fail on their own.
double run_nodes(const std::string& kjit, const std::string& scenario, std::vector<std::vector<Step>>& nodes) {
  std::map<pid_t, std::size_t> running;  // pid -> node
  std::vector<std::size_t> next(nodes.size(), 0);
  std::vector<std::string> failures;
  const double t0 = now_us();
  for (std::size_t n = 0; n < nodes.size(); ++n) running[spawn(kjit, nodes[n][next[n]++])] = n;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t n = it->second;
    running.erase(it);
    const Step& done = nodes[n][next[n] - 1];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failures.push_back(fmt::format("scenario \"{}\", node {}: kjit {} failed ({}); its stderr ({}) ends:\n{}",
                                     scenario, n, done.what, describe_status(status), done.err.string(),
                                     tail(read_text(done.err))));
      continue;  // the node's later steps are not run; the other nodes finish
    }
    if (next[n] < nodes[n].size()) running[spawn(kjit, nodes[n][next[n]++])] = n;
  }
  const double ms = (now_us() - t0) / 1000;
  if (!failures.empty()) {
    std::string all;
    for (const auto& f : failures) all += (all.empty() ? "" : "\n") + f;
    throw NodeFailure(all);
  }
  return ms;
}

// What the nodes' --json answers say, summed.
struct Counts {
  int compiled = 0, remote_hits = 0, waited = 0, disk_hits = 0;
  // The runtime counters (`kjit cache stats` of each node), summed.
  std::uint64_t stats_compiles = 0, stats_remote_hits = 0, stats_remote_timeouts = 0, stats_remote_errors = 0;
};

void count_outcomes(const std::string& scenario, std::size_t node, const Step& compile, int kernels, Counts& c) {
  const auto j = nlohmann::json::parse(read_text(compile.out), nullptr, false);
  if (!j.is_array() || static_cast<int>(j.size()) != kernels) {
    throw NodeFailure(fmt::format("scenario \"{}\", node {}: kjit compile --json gave no array of {} results ({})",
                                  scenario, node, kernels, compile.out.string()));
  }
  for (const auto& item : j) {
    const std::string outcome = item.is_object() ? item.value("outcome", "") : "";
    if (outcome == "compiled") ++c.compiled;
    else if (outcome == "remote_hit") ++c.remote_hits;
    else if (outcome == "waited") ++c.waited;
    else if (outcome == "hit") ++c.disk_hits;
    else {
      throw NodeFailure(fmt::format("scenario \"{}\", node {}: a result without a known outcome: {}", scenario, node,
                                    item.dump()));
    }
  }
}

// `kjit --json cache stats` of a node's cache, after its run (not timed).
void add_stats(const Settings& s, const std::string& scenario, std::size_t node, const fs::path& cache,
               const fs::path& logs, const std::vector<std::string>& env, Counts& c) {
  std::vector<std::vector<Step>> one = {{Step{"cache stats", {"--cache-dir", cache.string(), "--json", "cache", "stats"},
                                              env, logs / fmt::format("node{}.stats.out", node),
                                              logs / fmt::format("node{}.stats.err", node)}}};
  run_nodes(s.kjit, scenario, one);
  const auto j = nlohmann::json::parse(read_text(one[0][0].out), nullptr, false);
  if (!j.is_object()) throw std::runtime_error(fmt::format("kjit cache stats --json of {}: not JSON", cache.string()));
  c.stats_compiles += j.value("compiles", std::uint64_t{0});
  if (j.contains("remote") && j["remote"].is_object()) {
    c.stats_remote_hits += j["remote"].value("hits", std::uint64_t{0});
    c.stats_remote_timeouts += j["remote"].value("timeouts", std::uint64_t{0});
    c.stats_remote_errors += j["remote"].value("errors", std::uint64_t{0});
  }
}

// FLUSHALL on a server's own connection, so that a scenario starts cold.
void flush(const kjit::test::RedisServer& redis) {
  timeval tv{2, 0};
  std::unique_ptr<redisContext, void (*)(redisContext*)> c(redisConnectUnixWithTimeout(redis.socket().c_str(), tv),
                                                           redisFree);
  if (!c || c->err != 0) throw std::runtime_error("connecting to redis at " + redis.socket().string());
  auto* r = static_cast<redisReply*>(redisCommand(c.get(), "FLUSHALL"));
  const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
  if (r != nullptr) freeReplyObject(r);
  if (!ok || redis.dbsize() != 0) throw std::runtime_error("FLUSHALL failed on " + redis.socket().string());
}

struct Scenario {
  std::string name;
  std::string remote;  // KJIT_REMOTE_CACHE; "" for none
  bool bundle = false;
  std::vector<double> wall_ms;
  std::vector<Counts> counts;
};

[[noreturn]] void usage_and_exit(int code) {
  fmt::print(code ? stderr : stdout,
             "usage: bench_fleet [--runs 3] [--nodes 8] [--kernels 64] [--shards 4] [--arch sm_90] [--seed N]\n"
             "                   [--staggered] [--dir DIR] [--kjit PATH] [--keep]\n");
  std::exit(code);
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_and_exit(2);
      return argv[++i];
    };
    if (a == "--runs") s.runs = std::stoi(next());
    else if (a == "--nodes") s.nodes = std::stoi(next());
    else if (a == "--kernels") s.kernels = std::stoi(next());
    else if (a == "--shards") s.shards = std::stoi(next());
    else if (a == "--arch") s.arch = next();
    else if (a == "--seed") s.seed = std::stoull(next());
    else if (a == "--dir") s.dir = next();
    else if (a == "--kjit") s.kjit = next();
    else if (a == "--staggered") s.staggered = true;
    else if (a == "--keep") s.keep = true;
    else usage_and_exit(a == "--help" || a == "-h" ? 0 : 2);
  }
  if (s.runs < 1 || s.nodes < 1 || s.kernels < 1 || s.shards < 1) usage_and_exit(2);
  if (s.kjit.empty() || ::access(s.kjit.c_str(), X_OK) != 0) {
    throw std::runtime_error(fmt::format("no kjit CLI at \"{}\": build the kjit_cli target, or pass --kjit PATH", s.kjit));
  }
  return s;
}

std::string range_text(const std::vector<double>& v) {
  if (v.size() < 2) return "";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format("{:.0f}-{:.0f}", *lo, *hi);
}

int median_of(const std::vector<Counts>& runs, int Counts::*field) {
  std::vector<double> v;
  for (const auto& c : runs) v.push_back(c.*field);
  return static_cast<int>(median(v));
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Settings> settings;
  fs::path work;
  try {
    settings = parse(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_fleet: {}\n", e.what());
    return 2;
  }
  const Settings& s = *settings;
  work = (s.dir.empty() ? fs::temp_directory_path() : fs::path(s.dir)) / fmt::format("kjit-bench-fleet-{}", ::getpid());
  try {
    fs::create_directories(work / "logs");
    const fs::path logs = work / "logs";
    const std::string load_start = load_average();
    const std::vector<std::string> files = make_kernels(work / "kernels", s.kernels, s.seed);
    const std::vector<std::string> env = clean_environment();
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> e = env;
      e.insert(e.end(), extra.begin(), extra.end());
      return e;
    };
    // A node's compile: the bundle's must hit; a remote node's timeout is a bound only.
    auto node_env = [&](const Scenario& sc) {
      if (sc.bundle) return with({"KJIT_REQUIRE_HIT=1"});
      if (sc.remote.empty()) return env;
      return with({"KJIT_REMOTE_CACHE=" + sc.remote, "KJIT_REMOTE_TIMEOUT=2s"});
    };
    // Node p's compile: `kjit --cache-dir D --json compile --arch ARCH <files, maybe rotated>`.
    auto compile_args = [&](const fs::path& cache, int node) {
      std::vector<std::string> a = {"--cache-dir", cache.string(), "--json", "compile", "--arch", s.arch};
      const int first = s.staggered ? node * s.kernels / s.nodes : 0;
      for (int k = 0; k < s.kernels; ++k) a.push_back(files[(first + k) % s.kernels]);
      return a;
    };

    // The servers: one for scenario 2, S shards for scenario 3.
    kjit::test::RedisServer single(work / "redis-one");
    std::vector<std::unique_ptr<kjit::test::RedisServer>> shards;
    std::string shard_url;
    for (int i = 0; i < s.shards; ++i) {
      shards.push_back(std::make_unique<kjit::test::RedisServer>(work / fmt::format("redis-shard{}", i)));
      shard_url += (i ? "," : "") + shards.back()->url();
    }

    fmt::print("bench_fleet: {} nodes x {} kernels (arch {}), each node a `kjit compile` process with its own empty "
               "disk cache; {} run{} (medians), scenarios rotated; kernels in {} order; seed {}\n",
               s.nodes, s.kernels, s.arch, s.runs, s.runs == 1 ? "" : "s", s.staggered ? "staggered" : "the same",
               s.seed);
    fmt::print("machine: {} hardware threads, load average {} at the start; kjit {}; redis-server on unix sockets "
               "(1 and {} shards); remote nodes: KJIT_REMOTE_TIMEOUT=2s\n",
               std::thread::hardware_concurrency(), load_start, s.kjit, s.shards);

    // Scenario 4's bundle, made once as CI would (not timed): a key pair, the K kernels compiled
    // into a cache of CI's own, exported and signed. This also brings NVRTC into the page cache
    // before the first timed run.
    const fs::path bundle = work / "warm.kjb", key = work / "ci";
    {
      const double t0 = now_us();
      std::vector<std::vector<Step>> ci = {{
          Step{"cache keygen", {"--cache-dir", (work / "ci-cache").string(), "cache", "keygen", "--out", key.string()},
               env, logs / "ci.keygen.out", logs / "ci.keygen.err"},
          Step{"compile", compile_args(work / "ci-cache", 0), env, logs / "ci.compile.out", logs / "ci.compile.err"},
          Step{"cache export",
               {"--cache-dir", (work / "ci-cache").string(), "--json", "cache", "export", bundle.string(), "--arch",
                s.arch},
               with({"KJIT_REMOTE_SIGNING_KEY_FILE=" + key.string() + ".key"}), logs / "ci.export.out",
               logs / "ci.export.err"},
      }};
      run_nodes(s.kjit, "making the bundle", ci);
      const auto j = nlohmann::json::parse(read_text(ci[0][2].out), nullptr, false);
      const auto made = j.is_object() ? j.value("bundle", nlohmann::json::object()) : nlohmann::json::object();
      const auto entries = made.value("entries", std::uint64_t{0});
      if (entries != static_cast<std::uint64_t>(s.kernels)) {
        throw std::runtime_error(fmt::format("the bundle holds {} entries, not {} ({})", entries, s.kernels,
                                             ci[0][2].out.string()));
      }
      fmt::print("bundle for scenario 4 (made first, not timed): {} entries, {} bytes, {}, {:.0f} ms to compile "
                 "and export\n",
                 entries, j.value("file_size", std::uint64_t{0}), made.value("signature", std::string("?")),
                 (now_us() - t0) / 1000);
    }

    std::vector<Scenario> scenarios = {{"no remote", "", false},
                                       {"one Redis", single.url(), false},
                                       {fmt::format("{} Redis shards", s.shards), shard_url, false},
                                       {"bundle imported first", "", true}};
    for (int run = 0; run < s.runs; ++run) {
      for (std::size_t i = 0; i < scenarios.size(); ++i) {
        Scenario& sc = scenarios[(i + static_cast<std::size_t>(run)) % scenarios.size()];
        flush(single);
        for (const auto& shard : shards) flush(*shard);
        std::vector<std::vector<Step>> nodes(static_cast<std::size_t>(s.nodes));
        std::vector<fs::path> caches;
        for (int p = 0; p < s.nodes; ++p) {
          const fs::path cache = work / "nodes" / fmt::format("node{}", p);
          fs::remove_all(cache);  // each node starts from an empty disk cache
          caches.push_back(cache);
          auto& steps = nodes[static_cast<std::size_t>(p)];
          if (sc.bundle) {
            steps.push_back(Step{"cache import",
                                 {"--cache-dir", cache.string(), "--json", "cache", "import", bundle.string()},
                                 with({"KJIT_REMOTE_PUBLIC_KEY_FILE=" + key.string() + ".pub"}),
                                 logs / fmt::format("node{}.import.out", p), logs / fmt::format("node{}.import.err", p)});
          }
          steps.push_back(Step{"compile", compile_args(cache, p), node_env(sc),
                               logs / fmt::format("node{}.compile.out", p), logs / fmt::format("node{}.compile.err", p)});
        }
        const double ms = run_nodes(s.kjit, sc.name, nodes);
        Counts c;
        for (std::size_t p = 0; p < nodes.size(); ++p) {
          count_outcomes(sc.name, p, nodes[p].back(), s.kernels, c);
          add_stats(s, sc.name, p, caches[p], logs, env, c);
        }
        if (sc.bundle && c.compiled != 0) {
          throw NodeFailure(fmt::format("scenario \"{}\": {} NVRTC compiles after the import (expected none)", sc.name,
                                        c.compiled));
        }
        sc.wall_ms.push_back(ms);
        sc.counts.push_back(c);
        fmt::print("run {}/{}  {:<22} {:4} compiles {:4} remote hits {:4} waited {:4} disk hits  wall {:7.0f} ms   "
                   "[cache stats: {} compiles, {} remote hits, {} remote timeouts, {} remote errors]\n",
                   run + 1, s.runs, sc.name, c.compiled, c.remote_hits, c.waited, c.disk_hits, ms, c.stats_compiles,
                   c.stats_remote_hits, c.stats_remote_timeouts, c.stats_remote_errors);
        if (c.stats_compiles != static_cast<std::uint64_t>(c.compiled)) {
          fmt::print("  note: the runtime counters count {} compiles, the --json outcomes {}\n", c.stats_compiles,
                     c.compiled);
        }
        std::fflush(stdout);
      }
    }

    const double base = median(scenarios[0].wall_ms);
    fmt::print("\n{} nodes x {} kernels, medians of {} run{}; compiles and hits summed over the nodes\n", s.nodes,
               s.kernels, s.runs, s.runs == 1 ? "" : "s");
    fmt::print("{:<24} {:>8} {:>11} {:>7} {:>9} {:>9} {:>13} {:>17}\n", "scenario", "compiles", "remote hits", "waited",
               "disk hits", "wall ms", "(min-max)", "wall vs no remote");
    for (const auto& sc : scenarios) {
      const double wall = median(sc.wall_ms);
      fmt::print("{:<24} {:>8} {:>11} {:>7} {:>9} {:>9.0f} {:>13} {:>17.3f}\n", sc.name,
                 median_of(sc.counts, &Counts::compiled), median_of(sc.counts, &Counts::remote_hits),
                 median_of(sc.counts, &Counts::waited), median_of(sc.counts, &Counts::disk_hits), wall,
                 range_text(sc.wall_ms), base > 0 ? wall / base : 0.0);
    }
    fmt::print("load average at the end: {}\n", load_average());
  } catch (const NodeFailure& e) {
    fmt::print(stderr, "bench_fleet: {}\n(work folder kept: {})\n", e.what(), work.string());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_fleet: {}\n(work folder kept: {})\n", e.what(), work.string());
    return 2;
  }
  if (!s.keep) fs::remove_all(work);
  return 0;
}
