// bench_remote: the remote tier, with a real redis-server on a unix socket (Debian's, or
// $KJIT_REDIS_SERVER).
//   1. A remote hit in a fresh process whose local cache is empty, against the raw floor in the
//      same run, alternating, each in its own fresh process:
//        GPU: kjit Runtime::load -> launchable kernel (remote GET, checks, the backfill handed to the worker,
//             module load) vs raw connect + GET of the bare cubin + cuModuleLoadData +
//             cuModuleGetFunction; CUDA init is before both timers.
//        CPU: kjit Runtime::compile (remote GET, checks; the backfill handed to the worker) vs raw connect + GET of the
//             same entry bytes. Runs without a GPU.
//   2. Fleet cold start: N processes (default 8) with separate, empty local caches warm the same
//      K kernels (default 64) with `kjit warm`, without and then with the remote tier: NVRTC
//      compiles in total, and wall time.
//   bench_remote [runs] [processes] [kernels]
#include <kjit/tools.hpp>

#include "bench_util.hpp"
#include "core/driver/driver_api.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

namespace {

const char* k_source = R"(
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
extern "C" __global__ void gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
)";

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

// The raw floor's fetch: connect, GET, the bytes.
std::string raw_get(const std::string& socket, const std::string& name) {
  timeval tv{1, 0};
  redisContext* c = redisConnectUnixWithTimeout(socket.c_str(), tv);
  std::string out;
  if (c != nullptr && c->err == 0) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "GET %b", name.data(), name.size()));
    if (r != nullptr && r->type == REDIS_REPLY_STRING) out.assign(r->str, r->len);
    if (r != nullptr) freeReplyObject(r);
  }
  if (c != nullptr) redisFree(c);
  return out;
}

// mode url socket cache_dir key
int child(const std::string& mode, const std::string& url, const std::string& socket, const std::string& dir,
          const std::string& key) {
  kjit::RuntimeConfig c;
  c.cache_dir = dir;
  c.remote_cache = url;
  if (mode == "kjit-gpu" || mode == "raw-gpu") kjit::Device::get(0).make_current();  // not timed
  double t0 = now_us(), t1 = 0;
  if (mode == "kjit-gpu") {
    kjit::Runtime rt(c);
    auto m = rt.load(kjit::Program("remote_hit.cu", k_source));
    auto k = m.kernel<void(const float*, float*, int)>("square");
    t1 = now_us();
    if (m.compile_result().outcome != kjit::Outcome::remote_hit) return 3;
  } else if (mode == "raw-gpu") {
    const auto& api = kjit::driver::get();
    std::string cubin = raw_get(socket, "raw:cubin");
    CUmodule m;
    CUfunction f;
    kjit::driver::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
    kjit::driver::check(api.cuModuleGetFunction(&f, m, "square"), "cuModuleGetFunction", "bench");
    t1 = now_us();
  } else if (mode == "kjit-cpu") {
    kjit::Runtime rt(c);
    auto r = rt.compile(kjit::Program("remote_hit.cu", k_source), {.arch = kjit::Arch::sm(90)});
    t1 = now_us();
    if (r.outcome != kjit::Outcome::remote_hit) return 3;
  } else if (mode == "raw-cpu") {
    std::string entry = raw_get(socket, "kjit:" + key);
    t1 = now_us();
    if (entry.empty()) return 3;
  }
  std::printf("%.3f\n", t1 - t0);
  return 0;
}

double run_child(const char* self, const std::string& mode, const std::string& url, const std::string& socket,
                 const std::string& dir, const std::string& key) {
  std::filesystem::remove_all(dir);  // the local cache is empty for every kjit child
  std::string cmd = fmt::format("{} --child {} '{}' {} {} {}", self, mode, url, socket, dir, key);
  FILE* p = popen(cmd.c_str(), "r");
  double v = -1;
  if (!p || std::fscanf(p, "%lf", &v) != 1) v = -1;
  if (p) pclose(p);
  return v;
}

struct FleetRun {
  int compiled = 0, cached = 0, failed_processes = 0;
  double wall_ms = 0;
};

FleetRun fleet(const std::filesystem::path& nodes, const std::filesystem::path& kernels, const std::string& url,
               int processes) {
  std::vector<FILE*> procs;
  const double t0 = now_us();
  for (int p = 0; p < processes; ++p) {
    std::string env = url.empty() ? "" : fmt::format("KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=2s ", url);
    std::string cmd = fmt::format("{}{} --cache-dir {} --json warm {} --arch sm_90 -j 2 2>/dev/null", env, k_kjit,
                                  (nodes / fmt::format("node{}", p)).string(), kernels.string());
    procs.push_back(popen(cmd.c_str(), "r"));
  }
  FleetRun out;
  for (FILE* p : procs) {
    std::string text;
    char buf[4096];
    std::size_t n;
    while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    out.failed_processes += !p || pclose(p) != 0;
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object()) {
      for (const auto& item : j["items"]) {
        const std::string status = item.value("status", "");
        out.compiled += status == "compiled";  // compiled by NVRTC in this process
        out.cached += status != "compiled";
      }
    }
  }
  out.wall_ms = (now_us() - t0) / 1000;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--child") return child(argv[2], argv[3], argv[4], argv[5], argv[6]);
  const int runs = argc > 1 ? std::atoi(argv[1]) : 15;
  const int processes = argc > 2 ? std::atoi(argv[2]) : 8;
  const int kernels = argc > 3 ? std::atoi(argv[3]) : 64;
  const auto base = std::filesystem::temp_directory_path() / fmt::format("kjit-bench-remote-{}", getpid());
  std::filesystem::create_directories(base);
  kjit::test::RedisServer redis(base / "redis");
  const bool gpu = kjit::device_count() > 0;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::printf("bench_remote on %s (%s), redis-server on a unix socket\n", host,
              gpu ? kjit::Device::get(0).name().c_str() : "no GPU: the CPU part only");

  // 1. Fill the remote as another node would, and the raw floor's bare cubin.
  std::string key;
  {
    kjit::RuntimeConfig c;
    c.cache_dir = base / "filler";
    c.remote_cache = redis.url();
    kjit::Runtime rt(c);
    auto cpu = rt.compile(kjit::Program("remote_hit.cu", k_source), {.arch = kjit::Arch::sm(90)});
    key = cpu.key;
    if (gpu) {
      auto native = rt.compile(kjit::Program("remote_hit.cu", k_source), {});
      redis.set("raw:cubin", native.cubin);
      std::printf("native entry %s, cubin %zu bytes\n", native.key.c_str(), native.cubin.size());
    }
    std::printf("sm_90 entry %s: cubin %zu bytes, ptx %zu bytes\n", key.c_str(), cpu.cubin.size(), cpu.ptx.size());
  }  // the Runtime's destructor sends what is queued
  const std::string local = (base / "local").string(), socket = redis.socket().string();
  std::vector<double> kjit_cpu, raw_cpu, kjit_gpu, raw_gpu;
  for (int i = 0; i < runs; ++i) {
    raw_cpu.push_back(run_child(argv[0], "raw-cpu", redis.url(), socket, local, key));
    kjit_cpu.push_back(run_child(argv[0], "kjit-cpu", redis.url(), socket, local, key));
    if (gpu) {
      raw_gpu.push_back(run_child(argv[0], "raw-gpu", redis.url(), socket, local, key));
      kjit_gpu.push_back(run_child(argv[0], "kjit-gpu", redis.url(), socket, local, key));
    }
    for (auto* v : {&raw_cpu, &kjit_cpu, &raw_gpu, &kjit_gpu}) {
      if (!v->empty() && v->back() < 0) {
        std::fprintf(stderr, "bench_remote: a child failed (or was not a remote hit)\n");
        return 2;
      }
    }
  }
  std::printf("\nmedians of %d fresh processes each, local cache empty every time\n", runs);
  kjit::bench_util::row("remote hit, CPU part (GET+checks), us", median(kjit_cpu), median(raw_cpu), "us",
                        "reported; raw = connect + GET");
  if (gpu) {
    kjit::bench_util::row("remote hit -> launchable kernel, us", median(kjit_gpu), median(raw_gpu), "us",
                          "reported; raw = connect + GET + cuModuleLoadData");
  }

  // 2. Fleet cold start.
  std::filesystem::create_directories(base / "kernels");
  {
    nlohmann::json manifest{{"kjit_manifest", 1}, {"kernels", nlohmann::json::array()}};
    for (int k = 0; k < kernels; ++k) {
      const std::string file = fmt::format("k{}.cu", k);
      std::ofstream(base / "kernels" / file) << fmt::format(
          "extern \"C\" __global__ void k{0}(float* x, int n) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) x[i] = tanhf(x[i] * {1}.0f) + {0}.0f;\n}}\n", k, k + 2);
      manifest["kernels"].push_back({{"file", file}});
    }
    std::ofstream(base / "kernels/kjit.json") << manifest.dump(2);
  }
  std::filesystem::remove_all(base / "fleet-local");
  FleetRun alone = fleet(base / "fleet-local", base / "kernels", "", processes);
  redis.restart();  // empty
  FleetRun shared = fleet(base / "fleet-remote", base / "kernels", redis.url(), processes);
  std::printf("\nfleet cold start: %d processes, separate empty local caches, %d kernels each (kjit warm -j 2)\n",
              processes, kernels);
  std::printf("  local caches only : %4d NVRTC compiles, wall %8.0f ms, %d failed processes\n", alone.compiled,
              alone.wall_ms, alone.failed_processes);
  std::printf("  with remote tier  : %4d NVRTC compiles, wall %8.0f ms, %d failed processes\n", shared.compiled,
              shared.wall_ms, shared.failed_processes);
  std::printf("  ratio             : compiles %.3f, wall %.3f\n",
              alone.compiled ? double(shared.compiled) / alone.compiled : 0.0,
              alone.wall_ms > 0 ? shared.wall_ms / alone.wall_ms : 0.0);
  std::filesystem::remove_all(base);
  return 0;
}
