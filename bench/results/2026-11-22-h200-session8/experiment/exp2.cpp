// Experiment (session 8): which component of kjit's fresh-process hit is cold-expensive on the
// real machine. Each "warm-X" mode runs component X on ANOTHER program before the timer starts;
// the drop of the measured hit against plain "kjit" is X's first-use cost in that process.
#include <kjit/kjit.hpp>
#include "runtime/driver_api.hpp"
#include "cache/store.hpp"
#include "runtime/cache_key.hpp"
#include "runtime/request_hash.hpp"
#include "runtime/option_marshalling.hpp"
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <malloc.h>
#include <alloca.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>
static double us(){return std::chrono::duration<double,std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();}
static long flt(){ rusage r; getrusage(RUSAGE_SELF,&r); return r.ru_minflt; }
static const char* srcA = R"(
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
extern "C" __global__ void gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
)";
static const char* srcB = R"(
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] + 1.0f;
}
)";
using Sig = void(const float*, float*, int);
static volatile long sink;
static int child(const std::string& mode, const std::string& cubin_path){
  kjit::Device::get(0).make_current();
  const auto& api = kjit::runtime::driver();
  const bool all = mode == "warm-all";
  kjit::Program pb("b.cu", srcB);
  auto arch = kjit::Arch::sm(kjit::Device::current().compute_capability());
  if (mode == "warm-runtime" || all) { auto* r = new kjit::Runtime; sink = (long)r; }
  if (mode == "warm-reqhash" || all) { sink = (long)kjit::runtime::request_hash(pb, {}, 0).low; }
  if (mode == "warm-key" || all) { auto o = kjit::normalized({}); auto f = kjit::runtime::marshal(o, arch);
    auto k = kjit::runtime::CacheKey::compute(pb, f, arch, o.include_dirs, pb.directory()); sink = (long)k.key.hex().size(); }
  if (mode == "warm-get" || all) { kjit::cache::Store s(kjit::cache::StoreConfig{getenv("KJIT_CACHE_DIR"), 2ull << 30});
    auto g = s.get_in_place(kjit::cache::Key::from_hex(getenv("EXP_KEY_B")).value()); sink = (long)g.bytes.size(); }
  if (mode == "warm-compile") { kjit::Runtime r; auto c = r.compile(pb, {}); sink = (long)c.cubin.size(); }
  if (mode == "warm-hit") { auto* r = new kjit::Runtime; auto m = r->load(pb); auto k = m.kernel<Sig>("square"); sink = (long)&k; }
  if (mode.rfind("warm-driver",0)==0) {  // the driver's first module load and function lookup, on B's cubin
    std::ifstream in(getenv("EXP_CUBIN_B"), std::ios::binary); std::string s((std::istreambuf_iterator<char>(in)), {});
    CUmodule m; api.cuModuleLoadData(&m, s.data()); CUfunction f; api.cuModuleGetFunction(&f, m, "square"); size_t o, z; api.cuFuncGetParamInfo(f, 0, &o, &z); }
  if (mode == "kjit-heap" || mode == "raw-heap") {  // the heap's top pages already faulted in
    mallopt(M_TRIM_THRESHOLD, 64 << 20); mallopt(M_MMAP_THRESHOLD, 64 << 20);
    char* p = (char*)malloc(2 << 20); memset(p, 1, 2 << 20); sink = p[4096]; free(p); }
  if (mode == "kjit-stack" || mode == "raw-stack") {  // 512 KB of stack below this frame faulted in
    volatile char* p = (volatile char*)alloca(512 << 10); for (int i = 0; i < (512 << 10); i += 4096) p[i] = 1; sink = p[0]; }
  long f0=flt(); double t0=us(), t1;
  if (mode.rfind("raw",0)==0 || mode == "warm-driver-raw") {
    std::string cubin;
    int fd = ::open(cubin_path.c_str(), O_RDONLY | O_CLOEXEC); struct stat st{}; ::fstat(fd, &st);
    cubin.resize(st.st_size); if (::read(fd, cubin.data(), cubin.size()) != (ssize_t)cubin.size()) return 4; ::close(fd);
    CUmodule m; if (api.cuModuleLoadData(&m, cubin.data())) return 5;
    CUfunction f; if (api.cuModuleGetFunction(&f, m, "square")) return 6;
    t1=us();
  } else if (mode == "steps") {
    double T[12]; long F[12]; int n = 0; auto mark=[&]{ F[n] = flt(); T[n++] = us(); };
    mark();
    auto* rt = new kjit::Runtime; mark();
    kjit::Device dev = kjit::Device::current(); auto rh = kjit::runtime::request_hash(kjit::Program("disk_hit.cu", srcA), {}, dev.ordinal()); sink = (long)rh.low; mark();
    kjit::Program pa("disk_hit.cu", srcA); auto o = kjit::normalized({}); auto f = kjit::runtime::marshal(o, arch); mark();
    auto k = kjit::runtime::CacheKey::compute(pa, f, arch, o.include_dirs, pa.directory()); mark();
    kjit::cache::Store s(kjit::cache::StoreConfig{getenv("KJIT_CACHE_DIR"), 2ull << 30}); mark();
    auto g = s.get_in_place(k.key); mark();
    auto m = rt->load(pa); mark();  // the real thing, warm now except the driver
    auto kk = m.kernel<Sig>("square"); mark();
    t1 = T[n-1];
    const char* names[] = {"runtime", "device+reqhash", "program+options", "key", "store", "get", "load", "kernel"};
    for (int i = 1; i < n; ++i) std::fprintf(stderr, "%s %.1f(%ld) ", names[i-1], T[i]-T[i-1], F[i]-F[i-1]);
    std::fprintf(stderr, "\n"); (void)kk; (void)g;
  } else {  // kjit, kjit-heap, kjit-stack, warm-*
    kjit::Runtime* rt = new kjit::Runtime;
    auto* m = new kjit::Module(rt->load(kjit::Program("disk_hit.cu", srcA)));
    auto* k = new kjit::Kernel<Sig>(m->kernel<Sig>("square"));
    t1=us();
    if (m->compile_result().outcome != kjit::Outcome::hit) return 3;
    (void)k;
  }
  long f1=flt();
  std::printf("%.3f %ld\n", t1-t0, f1-f0); std::fflush(stdout); _exit(0);
}
int main(int argc, char** argv){
  if (argc==4 && std::string(argv[1])=="--child") return child(argv[2], argv[3]);
  int n = argc>1 ? atoi(argv[1]) : 21;
  auto dir = std::filesystem::temp_directory_path() / ("exp2-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  kjit::RuntimeConfig c; c.cache_dir = dir / "cache";
  std::string cubin_path = (dir / "a.cubin").string(), cubin_b = (dir / "b.cubin").string();
  { kjit::Runtime rt(c); auto r = rt.compile(kjit::Program("disk_hit.cu", srcA), {}); std::ofstream(cubin_path, std::ios::binary) << r.cubin;
    auto rb = rt.compile(kjit::Program("b.cu", srcB), {}); std::ofstream(cubin_b, std::ios::binary) << rb.cubin;
    ::setenv("EXP_KEY_B", rb.key.c_str(), 1); }
  ::setenv("KJIT_CACHE_DIR", c.cache_dir.c_str(), 1);
  ::setenv("EXP_CUBIN_B", cubin_b.c_str(), 1);
  std::vector<std::string> modes = {"raw","kjit","warm-runtime","warm-reqhash","warm-key","warm-get","warm-all","warm-compile","warm-driver","warm-hit","raw-warm-driver","kjit-heap","raw-heap","kjit-stack","raw-stack","steps"};
  if (const char* m = getenv("EXP_MODES")) { modes.clear(); std::string s=m; size_t p=0; while(p<s.size()){ size_t q=s.find(',',p); if(q==std::string::npos) q=s.size(); modes.push_back(s.substr(p,q-p)); p=q+1; } }
  std::map<std::string, std::vector<double>> t, fl;
  // one hit first, so that the entries' last use is recent in every timed child
  for (auto& mode : {"kjit"}) { std::string cmd = std::string(argv[0]) + " --child " + mode + " " + cubin_path; FILE* p = popen(cmd.c_str(), "r"); char b[256]; while (fgets(b, sizeof b, p)) {} pclose(p); }
  for (int i=0;i<n;++i) for (auto& mode: modes) {
    std::string m = mode == "raw-warm-driver" ? "raw" : mode;
    std::string cmd = std::string(argv[0]) + " --child " + mode + " " + cubin_path;
    if (mode == "raw-warm-driver") cmd = std::string(argv[0]) + " --child warm-driver-raw " + cubin_path;
    FILE* p = popen(cmd.c_str(), "r"); double v=-1; long f=0;
    if (!p || fscanf(p, "%lf %ld", &v, &f)!=2) { fprintf(stderr,"child %s failed\n", mode.c_str()); return 2; }
    pclose(p); t[mode].push_back(v); fl[mode].push_back(f);
  }
  auto med=[](std::vector<double> v){ std::sort(v.begin(),v.end()); return v[v.size()/2]; };
  double raw = med(t["raw"]), kj = med(t["kjit"]);
  for (auto& mode: modes) std::printf("%-16s median %8.1f us  (x%.2f of raw, %+7.1f us vs kjit)  faults %.0f\n", mode.c_str(), med(t[mode]), med(t[mode])/raw, med(t[mode]) - kj, med(fl[mode]));
  std::filesystem::remove_all(dir);
}
