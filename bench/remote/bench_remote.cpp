// bench_remote: the remote tier, with a real redis-server on a unix socket (Debian's, or
// $KJIT_REDIS_SERVER).
//   1. A remote hit in a fresh process whose local cache is empty, against the raw floor in the
//      same run, alternating, each in its own fresh process:
//        GPU: kjit Runtime::load -> launchable kernel (remote GET, checks, the backfill handed to the worker,
//             module load) vs raw connect + GET of the bare cubin + cuModuleLoadData +
//             cuModuleGetFunction; CUDA init is before both timers.
//        CPU: kjit Runtime::compile (remote GET, checks; the backfill handed to the worker) vs raw connect + GET of the
//             same entry bytes. Runs without a GPU.
//   2. The same remote hit from an HTTP level (a real nginx with WebDAV PUT on loopback, Debian's
//      nginx-light or $KJIT_NGINX; skipped without one or without the HTTP store), against a bare
//      libcurl GET of the same bytes (curl_global_init, an easy handle, GET, cleanup) in a fresh
//      process; on a GPU, the whole hit to a launchable kernel against that GET of the bare cubin +
//      cuModuleLoadData + cuModuleGetFunction.
//   2b. The same remote hit from an S3 level (s3rver on loopback, started as the tests start it:
//      tests/support/s3_server.cpp; node and its modules from install-deps.sh, or carried:
//      scripts/gpu-deps.sh; skipped without them), against a bare libcurl GET of the same object
//      signed with CURLOPT_AWS_SIGV4 in a fresh process (curl_global_init, a handle, the signed GET,
//      cleanup); on a GPU, the whole hit to a launchable kernel against that signed GET of the bare
//      cubin + cuModuleLoadData + cuModuleGetFunction.
//   3. Fleet cold start: N processes (default 8) with separate, empty local caches warm the same
//      K kernels (default 64) with `kjit warm`, without and then with the remote tier: NVRTC
//      compiles in total, and wall time.
//   bench_remote [runs] [processes] [kernels]
#include <kjit/tools.hpp>

#include "bench_util.hpp"
#include "core/driver/driver_api.hpp"
#include "core/trace/phase.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#ifdef KJIT_BENCH_HTTP
#include "support/http_server.hpp"
#include "support/s3_server.hpp"
#include <curl/curl.h>
#include <sodium.h>
#endif

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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

#ifdef KJIT_BENCH_HTTP
// The raw floor's HTTP fetch, as a program without kjit would do it: libcurl set up, one GET.
std::size_t append(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

std::string raw_http_get(const std::string& url) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURL* c = curl_easy_init();
  std::string out;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
  long status = 0;
  if (curl_easy_perform(c) != CURLE_OK || curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
      status != 200) {
    out.clear();
  }
  curl_easy_cleanup(c);
  return out;
}

bool raw_http_put(const std::string& url, const std::string& body) {
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  long status = 0;
  const bool ok = curl_easy_perform(c) == CURLE_OK && curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
                  (status == 201 || status == 204);
  curl_easy_cleanup(c);
  return ok;
}

// The raw floor's S3 request, as a program without kjit would make it: libcurl set up, one request
// signed with libcurl's own SigV4 (the key pair from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, as
// kjit reads them). A GET returns the body (empty: failed); a PUT of *put_body returns "ok".
std::string raw_s3_request(const std::string& url, const std::string* put_body = nullptr) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURL* c = curl_easy_init();
  const char* id = std::getenv("AWS_ACCESS_KEY_ID");
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  const std::string user = fmt::format("{}:{}", id ? id : "", secret ? secret : "");
  const std::string body = put_body ? *put_body : std::string();
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(body.data()), body.size());
  std::string header = "x-amz-content-sha256: ";
  for (unsigned char b : digest) header += fmt::format("{:02x}", b);
  curl_slist* headers = curl_slist_append(nullptr, header.c_str());
  std::string out;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(c, CURLOPT_USERPWD, user.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
  if (put_body) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, put_body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(put_body->size()));
  }
  long status = 0;
  const bool ok = curl_easy_perform(c) == CURLE_OK && curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
                  status == 200;
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (!ok) return {};
  return put_body ? std::string("ok") : out;
}

// Where kjit's HTTP store keeps a name: <base>/ac/<sha256 of the name> (docs/http-store.md).
std::string http_value_url(const std::string& base, const std::string& name) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  std::string out = base + "/ac/";
  for (unsigned char b : digest) out += fmt::format("{:02x}", b);
  return out;
}
#endif

// Where a kjit child's hit goes (#42 item 6): kjit's own phase marks (core/trace/phase.hpp), taken
// with a recorder attached for the child's life, as microseconds: "ctor" the Runtime's construction,
// then each phase's total ("request hash", "remote hit": the compile service's obtain, disk miss, GET
// and checks; "load": cuModuleLoadData and the kernels' lookup). Printed after the total.
std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch()).count());
}
double g_phase_us[16] = {};
void record_phase(kjit::trace::HostRange&& r) noexcept {
  const auto i = static_cast<std::size_t>(r.phase);
  if (i < std::size(g_phase_us)) g_phase_us[i] += static_cast<double>(r.end - r.start) / 1000;
}
const kjit::trace::Recorder g_recorder{&steady_ns, &record_phase};
constexpr kjit::trace::Phase k_breakdown[] = {kjit::trace::Phase::request_hash, kjit::trace::Phase::remote_hit,
                                              kjit::trace::Phase::load};

// mode url socket cache_dir key (http modes: `socket` is the URL the raw floor GETs)
int child(const std::string& mode, const std::string& url, const std::string& socket, const std::string& dir,
          const std::string& key) {
  kjit::RuntimeConfig c = kjit::RuntimeConfig::from_environment();  // KJIT_PREPARE=off, to compare
  c.cache_dir = dir;
  c.remote_cache = url;
  c.remote_timeout = std::chrono::seconds(1);  // a bound only: a busy machine must not turn a hit into a miss
  if (mode.ends_with("-gpu")) kjit::Device::get(0).make_current();  // not timed
  kjit::trace::attach(&g_recorder);
  double t0 = now_us(), t1 = 0, ctor = 0;
  if (mode == "kjit-gpu" || mode == "kjit-http-gpu" || mode == "kjit-s3-gpu") {
    kjit::Runtime rt(c);
    ctor = now_us() - t0;
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
#ifdef KJIT_BENCH_HTTP
  } else if (mode == "raw-http-gpu") {
    const auto& api = kjit::driver::get();
    std::string cubin = raw_http_get(socket);
    CUmodule m;
    CUfunction f;
    kjit::driver::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
    kjit::driver::check(api.cuModuleGetFunction(&f, m, "square"), "cuModuleGetFunction", "bench");
    t1 = now_us();
  } else if (mode == "raw-http-cpu") {
    std::string entry = raw_http_get(socket);
    t1 = now_us();
    if (entry.empty()) return 3;
  } else if (mode == "raw-s3-gpu") {
    const auto& api = kjit::driver::get();
    std::string cubin = raw_s3_request(socket);
    CUmodule m;
    CUfunction f;
    kjit::driver::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
    kjit::driver::check(api.cuModuleGetFunction(&f, m, "square"), "cuModuleGetFunction", "bench");
    t1 = now_us();
  } else if (mode == "raw-s3-cpu") {
    std::string entry = raw_s3_request(socket);
    t1 = now_us();
    if (entry.empty()) return 3;
#endif
  } else if (mode == "kjit-cpu" || mode == "kjit-http-cpu" || mode == "kjit-s3-cpu") {
    kjit::Runtime rt(c);
    ctor = now_us() - t0;
    auto r = rt.compile(kjit::Program("remote_hit.cu", k_source), {.arch = kjit::Arch::sm(90)});
    t1 = now_us();
    if (r.outcome != kjit::Outcome::remote_hit) return 3;
  } else if (mode == "raw-cpu") {
    std::string entry = raw_get(socket, "kjit:" + key);
    t1 = now_us();
    if (entry.empty()) return 3;
  }
  std::printf("%.3f %.3f", t1 - t0, ctor);
  for (kjit::trace::Phase ph : k_breakdown) std::printf(" %.3f", g_phase_us[static_cast<std::size_t>(ph)]);
  std::printf("\n");
  return 0;
}

// A child's parts besides its total: the Runtime's construction, then k_breakdown's phases.
struct Parts {
  std::vector<double> ctor, phase[std::size(k_breakdown)];
};

// Where a child starts: a node whose cache folder lacks the entry (what an earlier process on the
// node left is kept: NVRTC's answer, base::nvrtc_facts), or a fresh node (no cache folder at all).
enum class Node { lacks_entry, fresh };

// The cache folder `dir` as `node` has it.
void empty_local_cache(const std::string& dir, Node node) {
  if (node == Node::fresh) {
    std::filesystem::remove_all(dir);
    return;
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.path().filename().string().starts_with("nvrtc-")) std::filesystem::remove_all(e.path());
  }
}

double run_child(const char* self, const std::string& mode, const std::string& url, const std::string& socket,
                 const std::string& dir, const std::string& key, Parts* parts = nullptr, Node node = Node::lacks_entry) {
  empty_local_cache(dir, node);
  std::string cmd = fmt::format("{} --child {} '{}' {} {} {}", self, mode, url, socket, dir, key);
  FILE* p = popen(cmd.c_str(), "r");
  double v = -1, ctor = 0, phase[std::size(k_breakdown)] = {};
  if (!p || std::fscanf(p, "%lf %lf %lf %lf %lf", &v, &ctor, &phase[0], &phase[1], &phase[2]) < 1) v = -1;
  if (p) pclose(p);
  if (parts && v >= 0) {
    parts->ctor.push_back(ctor);
    for (std::size_t i = 0; i < std::size(k_breakdown); ++i) parts->phase[i].push_back(phase[i]);
  }
  return v;
}

// "  of which: Runtime 120 us, request hash 3 us, remote hit 250 us, load 180 us, rest 40 us" (medians).
void print_parts(const char* what, const Parts& parts, double total) {
  std::string line = fmt::format("  {} (medians), us: Runtime construction {:.0f}", what, median(parts.ctor));
  double sum = median(parts.ctor);
  for (std::size_t i = 0; i < std::size(k_breakdown); ++i) {
    const double m = median(parts.phase[i]);
    sum += m;
    line += fmt::format(", {} {:.0f}", kjit::trace::to_string(k_breakdown[i]), m);
  }
  std::printf("%s, the rest %.0f\n", line.c_str(), total - sum);
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
    c.remote_timeout = std::chrono::seconds(1);
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
  std::vector<double> kjit_cpu, raw_cpu, kjit_gpu, raw_gpu, kjit_fresh_cpu, kjit_fresh_gpu;
  Parts cpu_parts, gpu_parts, fresh_cpu_parts, fresh_gpu_parts;
  const std::string fresh = (base / "local-fresh").string();
  (void)run_child(argv[0], "kjit-cpu", redis.url(), socket, local, key);  // an earlier process on the node
  for (int i = 0; i < runs; ++i) {
    raw_cpu.push_back(run_child(argv[0], "raw-cpu", redis.url(), socket, local, key));
    kjit_cpu.push_back(run_child(argv[0], "kjit-cpu", redis.url(), socket, local, key, &cpu_parts));
    kjit_fresh_cpu.push_back(
        run_child(argv[0], "kjit-cpu", redis.url(), socket, fresh, key, &fresh_cpu_parts, Node::fresh));
    if (gpu) {
      raw_gpu.push_back(run_child(argv[0], "raw-gpu", redis.url(), socket, local, key));
      kjit_gpu.push_back(run_child(argv[0], "kjit-gpu", redis.url(), socket, local, key, &gpu_parts));
      kjit_fresh_gpu.push_back(
          run_child(argv[0], "kjit-gpu", redis.url(), socket, fresh, key, &fresh_gpu_parts, Node::fresh));
    }
    for (auto* v : {&raw_cpu, &kjit_cpu, &raw_gpu, &kjit_gpu, &kjit_fresh_cpu, &kjit_fresh_gpu}) {
      if (!v->empty() && v->back() < 0) {
        std::fprintf(stderr, "bench_remote: a child failed (or was not a remote hit)\n");
        return 2;
      }
    }
  }
  std::printf("\nmedians of %d fresh processes each, the local cache folder without the entry every time (NVRTC's "
              "answer, which an earlier process on the node kept there, left in it)\n", runs);
  kjit::bench_util::row("remote hit, CPU part (GET+checks), us", median(kjit_cpu), median(raw_cpu), "us",
                        "reported; raw = connect + GET");
  print_parts("kjit's CPU part", cpu_parts, median(kjit_cpu));
  if (gpu) {
    kjit::bench_util::row("remote hit -> launchable kernel, us", median(kjit_gpu), median(raw_gpu), "us",
                          "reported; raw = connect + GET + cuModuleLoadData");
    print_parts("kjit's hit to a kernel", gpu_parts, median(kjit_gpu));
  }
  std::printf("on a fresh node (no local cache folder: NVRTC opened for its version), medians of %d\n", runs);
  kjit::bench_util::row("fresh node: remote hit, CPU part, us", median(kjit_fresh_cpu), median(raw_cpu), "us",
                        "reported; raw = connect + GET");
  print_parts("kjit's CPU part", fresh_cpu_parts, median(kjit_fresh_cpu));
  if (gpu) {
    kjit::bench_util::row("fresh node: remote hit -> launchable kernel, us", median(kjit_fresh_gpu), median(raw_gpu),
                          "us", "reported; raw = connect + GET + cuModuleLoadData");
    print_parts("kjit's hit to a kernel", fresh_gpu_parts, median(kjit_fresh_gpu));
  }

#ifdef KJIT_BENCH_HTTP
  // 2. The same hit from an HTTP level.
  if (!kjit::test::NginxServer::binary().empty()) {
    kjit::test::NginxServer nginx(base / "nginx");
    const std::string http = nginx.url();
    {
      kjit::RuntimeConfig c;
      c.cache_dir = base / "http-filler";
      c.remote_cache = http;
      c.remote_timeout = std::chrono::seconds(1);
      kjit::Runtime rt(c);
      rt.compile(kjit::Program("remote_hit.cu", k_source), {.arch = kjit::Arch::sm(90)});
      if (gpu) {
        auto native = rt.compile(kjit::Program("remote_hit.cu", k_source), {});
        if (!raw_http_put(http + "/raw-cubin", native.cubin)) std::fprintf(stderr, "bench_remote: PUT of the cubin failed\n");
      }
    }
    const std::string entry_url = http_value_url(http, "kjit:" + key);
    std::vector<double> kjit_http, raw_http, kjit_http_gpu, raw_http_gpu;
    for (int i = 0; i < runs; ++i) {
      raw_http.push_back(run_child(argv[0], "raw-http-cpu", http, entry_url, local, key));
      kjit_http.push_back(run_child(argv[0], "kjit-http-cpu", http, entry_url, local, key));
      if (gpu) {
        raw_http_gpu.push_back(run_child(argv[0], "raw-http-gpu", http, http + "/raw-cubin", local, key));
        kjit_http_gpu.push_back(run_child(argv[0], "kjit-http-gpu", http, entry_url, local, key));
      }
      for (auto* v : {&raw_http, &kjit_http, &raw_http_gpu, &kjit_http_gpu}) {
        if (!v->empty() && v->back() < 0) {
          std::fprintf(stderr, "bench_remote: an HTTP child failed (or was not a remote hit): %s\n",
                       v == &raw_http ? "raw" : v == &kjit_http ? "kjit" : v == &raw_http_gpu ? "raw gpu" : "kjit gpu");
          return 2;
        }
      }
    }
    std::printf("\nHTTP level (nginx on loopback), medians of %d fresh processes each\n", runs);
    kjit::bench_util::row("HTTP remote hit, CPU part (GET+checks), us", median(kjit_http), median(raw_http), "us",
                          "reported; raw = libcurl init + GET");
    if (gpu) {
      kjit::bench_util::row("HTTP remote hit -> launchable kernel, us", median(kjit_http_gpu), median(raw_http_gpu),
                            "us", "reported; raw = libcurl GET + cuModuleLoadData");
    }
  } else {
    std::printf("\nHTTP level: skipped (no nginx: install nginx-light or set KJIT_NGINX)\n");
  }

  // 2b. The same hit from an S3 level.
  if (const std::string why = kjit::test::s3_unavailable(); why.empty()) {
    kjit::test::S3Server s3(base / "s3");
    kjit::test::S3Server::use_credentials();  // this process's AWS_* variables: the children inherit them
    const std::string url = s3.url("bench");
    {
      kjit::RuntimeConfig c;
      c.cache_dir = base / "s3-filler";
      c.remote_cache = url;
      c.remote_timeout = std::chrono::seconds(1);
      kjit::Runtime rt(c);
      rt.compile(kjit::Program("remote_hit.cu", k_source), {.arch = kjit::Arch::sm(90)});
      if (gpu) {
        auto native = rt.compile(kjit::Program("remote_hit.cu", k_source), {});
        if (raw_s3_request(s3.endpoint() + "/kjit/raw-cubin", &native.cubin).empty()) {
          std::fprintf(stderr, "bench_remote: the signed PUT of the cubin failed\n");
        }
      }
    }
    // kjit's S3 store keeps a name at <bucket>/<prefix>/ac/<sha256 of the name> (docs/remote-cache.md).
    std::string entry_url = http_value_url(s3.endpoint() + "/kjit/bench", "kjit:" + key);
    std::vector<double> kjit_s3, raw_s3, kjit_s3_gpu, raw_s3_gpu;
    for (int i = 0; i < runs; ++i) {
      raw_s3.push_back(run_child(argv[0], "raw-s3-cpu", url, entry_url, local, key));
      kjit_s3.push_back(run_child(argv[0], "kjit-s3-cpu", url, entry_url, local, key));
      if (gpu) {
        raw_s3_gpu.push_back(run_child(argv[0], "raw-s3-gpu", url, s3.endpoint() + "/kjit/raw-cubin", local, key));
        kjit_s3_gpu.push_back(run_child(argv[0], "kjit-s3-gpu", url, entry_url, local, key));
      }
      for (auto* v : {&raw_s3, &kjit_s3, &raw_s3_gpu, &kjit_s3_gpu}) {
        if (!v->empty() && v->back() < 0) {
          std::fprintf(stderr, "bench_remote: an S3 child failed (or was not a remote hit): %s\n",
                       v == &raw_s3 ? "raw" : v == &kjit_s3 ? "kjit" : v == &raw_s3_gpu ? "raw gpu" : "kjit gpu");
          return 2;
        }
      }
    }
    std::printf("\nS3 level (s3rver on loopback, SigV4), medians of %d fresh processes each\n", runs);
    kjit::bench_util::row("S3 remote hit, CPU part (GET+checks), us", median(kjit_s3), median(raw_s3), "us",
                          "reported; raw = libcurl init + signed GET");
    if (gpu) {
      kjit::bench_util::row("S3 remote hit -> launchable kernel, us", median(kjit_s3_gpu), median(raw_s3_gpu), "us",
                            "1.5x; raw = libcurl signed GET + cuModuleLoadData");
    }
  } else {
    std::printf("\nS3 level: skipped (%s)\n", why.c_str());
  }
#endif

  // 3. Fleet cold start.
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
