// Experiment: where a fresh process's disk hit goes on the real machine.
#include <kjit/kjit.hpp>
#include "runtime/driver_api.hpp"
#include "cache/store.hpp"
#include "cache/entry.hpp"
#include "runtime/cache_key.hpp"
#include "runtime/cubin_info.hpp"
#include "runtime/request_hash.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/option_marshalling.hpp"
#include <nvrtc.h>
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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
#include <sys/mman.h>
static void populate(const char* lib){
  FILE* f=fopen("/proc/self/maps","r"); char line[512];
  while(fgets(line,sizeof line,f)){ if(!strstr(line,lib)) continue; unsigned long a,b; char perm[8];
    sscanf(line,"%lx-%lx %7s",&a,&b,perm); if(perm[0]!='r') continue; madvise((void*)a, b-a, 22 /*MADV_POPULATE_READ*/); }
  fclose(f);
}
static void touch(const char* lib){
  FILE* f=fopen("/proc/self/maps","r"); char line[512]; volatile unsigned long sum=0;
  while(fgets(line,sizeof line,f)){ if(!strstr(line,lib)) continue; unsigned long a,b; char perm[8];
    sscanf(line,"%lx-%lx %7s",&a,&b,perm); if(perm[0]!='r') continue;
    for(unsigned long p=a;p<b;p+=64) sum = sum + *(volatile unsigned char*)p; }
  fclose(f);
}
using Sig = void(const float*, float*, int);
__attribute__((noinline)) kjit::Module* warm_load(kjit::Runtime* rt) { return new kjit::Module(rt->load(kjit::Program("b.cu", srcB))); }
static int child(const std::string& mode, const std::string& cubin_path){
  kjit::Device::get(0).make_current();
  const auto& api = kjit::runtime::driver();
  if (mode=="kjit-touch") touch("libkjit");
  if (mode=="kjit-populate") { populate("libstdc++"); populate("libc.so"); populate("libkjit"); }
  if (mode=="kjit-touchall") { touch("libkjit"); touch("libstdc++"); touch("libc.so"); }
  std::optional<kjit::Runtime> warm_rt;
  if (mode=="kjit-warm") { warm_rt.emplace(); auto m = warm_rt->load(kjit::Program("b.cu", srcB)); auto k = m.kernel<Sig>("square"); }
  if (mode=="lean" || mode=="leanq" || mode=="leanq-noutime") {
    const bool quiet = mode != "lean"; const bool utime = mode != "leanq-noutime";
    double T[20]; long F[20]; int k=0; auto mk=[&]{ if (quiet && k>0) return; T[k]=us();F[k]=flt();++k;}; mk(); double t0=T[0]; long f0=F[0];
    const char* dir = getenv("KJIT_CACHE_DIR"); mk();
    int maj=0,min=0; nvrtcVersion(&maj,&min); int na=0; nvrtcGetNumSupportedArchs(&na); int archs[64]; nvrtcGetSupportedArchs(archs); mk();
    int cc = kjit::Device::current().compute_capability(); mk();
    XXH3_state_t st; XXH3_128bits_reset(&st);
    auto field=[&](const char* label, const void* v, size_t n){ size_t l=strlen(label); XXH3_128bits_update(&st,"F",1); XXH3_128bits_update(&st,&l,8); XXH3_128bits_update(&st,label,l); XXH3_128bits_update(&st,&n,8); XXH3_128bits_update(&st,v,n); };
    char tmp[64]; int tl = snprintf(tmp, sizeof tmp, "%d.%d sm_%d", maj, min, cc);
    field("kjit-version","0.1.0",5); field("nvrtc-version",tmp,tl); field("target",tmp,tl);
    field("option","--gpu-architecture=sm_90",24); field("option","--std=c++17",11); field("program-name","disk_hit.cu",11); field("source",srcA,strlen(srcA));
    XXH128_hash_t h = XXH3_128bits_digest(&st); mk();
    char path[4096]; snprintf(path, sizeof path, "%s/%02x/%016llx.kjit", dir, (unsigned)(h.high64>>56), (unsigned long long)h.low64);
    const char* real = getenv("EXP_ENTRY"); mk();
    int fd = ::open(real, O_RDONLY|O_CLOEXEC);
    char* buf = (char*)malloc(65536); ssize_t n = ::read(fd, buf, 65536); mk();
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}}; if (utime) ::futimens(fd, times); ::close(fd); mk();
    XXH128_hash_t c = XXH3_128bits(buf, n-16); (void)c; mk();
    // sections: header 16 bytes (magic 4, version 2, count 2, payload 8), each: kind 2, size 8, bytes
    size_t pos=16; unsigned cnt = (unsigned char)buf[6] | ((unsigned char)buf[7]<<8); const char* cubin=nullptr; size_t cubin_size=0;
    for (unsigned i=0;i<cnt;++i){ unsigned kind=(unsigned char)buf[pos]|((unsigned char)buf[pos+1]<<8); unsigned long long sz; memcpy(&sz, buf+pos+2, 8); pos+=10; if(kind==1 && !cubin){cubin=buf+pos;cubin_size=sz;} pos+=sz; }
    if (!cubin) return 9; mk();
    CUmodule m; if (api.cuModuleLoadData(&m, cubin)) return 5; mk();
    auto sizes = kjit::runtime::cubin_param_sizes(std::string_view(cubin, cubin_size), "square"); mk();
    CUfunction fn; if (api.cuModuleGetFunction(&fn, m, "square")) return 6;
    double t1=us(); long f1=flt();
    if (!sizes || sizes->size()!=3) return 10; if(!quiet) for(int i=1;i<k;++i) fprintf(stderr,"%.1f(%ld) ",T[i]-T[i-1],F[i]-F[i-1]); if(!quiet) fprintf(stderr,"| getfn %.1f\n", t1-T[k-1]);
    std::printf("%.3f %ld\n", t1-t0, f1-f0); std::fflush(stdout); _exit(0);
  }
  if (mode=="steps2") {
    double T[20]; int n=0; long F[20];
    auto mark=[&]{T[n]=us();F[n]=flt();++n;};
    mark();
    kjit::Device dev = kjit::Device::current(); mark();
    auto* rt = new kjit::Runtime; mark();
    auto* prog = new kjit::Program("disk_hit.cu", srcA); mark();
    auto rh = kjit::runtime::request_hash(*prog, {}, 0); mark();
    auto o = kjit::normalized({}); mark();
    auto archs = kjit::runtime::NvrtcCompiler::supported_archs(); auto ver = kjit::runtime::NvrtcCompiler::version(); mark();
    auto arch = kjit::Arch::sm(dev.compute_capability()); auto flags = kjit::runtime::marshal(o, arch); mark();
    auto key = kjit::runtime::CacheKey::compute(*prog, flags, arch, {}, {}); mark();
    kjit::cache::Store store(kjit::cache::StoreConfig{getenv("KJIT_CACHE_DIR"), 2ull << 30}); mark();
    auto g = store.get_in_place(key.key); mark();
    auto m = rt->load(*prog); mark();
    auto k = m.kernel<Sig>("square"); mark();
    const char* names[]={"device","rt-ctor","program","request_hash","normalized","nvrtc","marshal","key","store","get_in_place","load(warm-ish)","kernel"};
    for(int i=1;i<n;++i) std::fprintf(stderr, "%s %.1f(%ld) ", names[i-1], T[i]-T[i-1], F[i]-F[i-1]);
    std::fprintf(stderr, "\n"); std::printf("%.3f %ld\n", T[n-1]-T[0], F[n-1]-F[0]); std::fflush(stdout); _exit(0);
  }
  if (mode=="steps") {
    double T[20]; long F[20]; int n=0;
    auto mark=[&]{T[n]=us();F[n]=flt();++n;};
    mark();
    kjit::cache::Store store(kjit::cache::StoreConfig{getenv("KJIT_CACHE_DIR"), 2ull << 30}); mark();
    kjit::Program prog("disk_hit.cu", srcA); mark();
    auto arch = kjit::Arch::sm(kjit::Device::get(0).compute_capability());
    auto flags = kjit::canonical_flags({}, arch); mark();
    auto key = kjit::runtime::CacheKey::compute(prog, flags, arch, {}, {}); mark();
    std::string path = store.entry_path(key.key).string(); mark();
    int fd = ::open(path.c_str(), O_RDONLY|O_CLOEXEC); mark();
    struct stat st{}; ::fstat(fd,&st); mark();
    std::string bytes; bytes.resize(st.st_size); mark();
    if (::read(fd, bytes.data(), bytes.size()) != (ssize_t)bytes.size()) return 7; mark();
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(fd, times); mark(); ::close(fd); mark();
    auto parsed = kjit::cache::parse(bytes); mark();
    std::string cubin; for (auto& [kind, b] : parsed.entry->sections) if (kind == kjit::cache::SectionKind::cubin) cubin = b;
    CUmodule m; if (api.cuModuleLoadData(&m, cubin.data())) return 5; mark();
    CUfunction fn; if (api.cuModuleGetFunction(&fn, m, "square")) return 6; mark();
    auto got = store.get(key.key); mark();
    auto key2 = kjit::runtime::CacheKey::compute(prog, flags, arch, {}, {}); mark();
    const char* names[]={"store","program","flags","key","path","open","fstat","resize","read","futimens","close","parse","load","getfn","get(again)","key(again)"};
    for(int i=1;i<n;++i) std::fprintf(stderr, "%s %.1f(%ld) ", names[i-1], T[i]-T[i-1], F[i]-F[i-1]);
    std::fprintf(stderr, "\n"); std::printf("%.3f %ld\n", T[n-3]-T[0], F[n-3]-F[0]); std::fflush(stdout); _exit(0);
  }
  if (mode=="phases") {
    double a=us(); long fa=flt(); auto* rt = new kjit::Runtime; double b=us(); long fb=flt();
    auto* m = new kjit::Module(rt->load(kjit::Program("disk_hit.cu", srcA))); double c=us(); long fc=flt();
    auto* k = new kjit::Kernel<Sig>(m->kernel<Sig>("square")); double d=us(); long fd=flt();
    auto* rt2 = new kjit::Runtime; double e=us(); long fe=flt();
    auto* m2 = warm_load(rt2); double f=us(); long ff=flt();
    auto* k2 = new kjit::Kernel<Sig>(m2->kernel<Sig>("square")); double g=us(); long fg=flt();
    std::fprintf(stderr, "cold: ctor %.1f(%ld) load %.1f(%ld) kernel %.1f(%ld) | warm: ctor %.1f(%ld) load %.1f(%ld) kernel %.1f(%ld)\n",
      b-a,fb-fa,c-b,fc-fb,d-c,fd-fc,e-d,fe-fd,f-e,ff-fe,g-f,fg-ff);
    (void)k; (void)k2; std::printf("%.3f %ld\n", d-a, fd-fa); std::fflush(stdout); _exit(0);
  }
  long f0=flt(); double t0=us(), t1;
  if (mode.rfind("raw",0)==0) {
    std::string cubin;
    int fd = ::open(cubin_path.c_str(), O_RDONLY | O_CLOEXEC); struct stat st{}; ::fstat(fd, &st);
    cubin.resize(st.st_size); if (::read(fd, cubin.data(), cubin.size()) != (ssize_t)cubin.size()) return 4; ::close(fd);
    CUmodule m; if (api.cuModuleLoadData(&m, cubin.data())) return 5;
    CUfunction f; if (api.cuModuleGetFunction(&f, m, "square")) return 6;
    t1=us();
  } else {
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
  auto dir = std::filesystem::temp_directory_path() / ("exphit-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  kjit::RuntimeConfig c; c.cache_dir = dir / "cache";
  std::string cubin_path = (dir / "a.cubin").string();
  { kjit::Runtime rt(c); auto r = rt.compile(kjit::Program("disk_hit.cu", srcA), {}); std::ofstream(cubin_path, std::ios::binary) << r.cubin;
    rt.compile(kjit::Program("b.cu", srcB), {}); }
  ::setenv("KJIT_CACHE_DIR", c.cache_dir.c_str(), 1);
  { kjit::Program p("disk_hit.cu", srcA); auto arch = kjit::Arch::sm(kjit::Device::get(0).compute_capability());
    auto key = kjit::runtime::CacheKey::compute(p, kjit::canonical_flags({}, arch), arch, {}, {});
    kjit::cache::Store store(kjit::cache::StoreConfig{c.cache_dir.string(), 2ull << 30});
    ::setenv("EXP_ENTRY", store.entry_path(key.key).c_str(), 1); }
  std::vector<std::string> modes = {"raw","kjit","kjit-touch","kjit-touchall","kjit-warm","kjit-populate","phases","steps","lean","raw-bindnow","kjit-bindnow"};
  if (const char* m = getenv("EXP_MODES")) { modes.clear(); std::string s=m; size_t p=0; while(p<s.size()){ size_t q=s.find(',',p); if(q==std::string::npos) q=s.size(); modes.push_back(s.substr(p,q-p)); p=q+1; } }
  std::map<std::string, std::vector<double>> t, fl;
  for (int i=0;i<n;++i) for (auto& mode: modes) {
    std::string m = mode, env;
    if (m.size()>8 && m.substr(m.size()-8)=="-bindnow") { env = "LD_BIND_NOW=1 "; m = m.substr(0, m.size()-8); }
    std::string cmd = env + argv[0] + " --child " + m + " " + cubin_path;
    FILE* p = popen(cmd.c_str(), "r"); double v=-1; long f=0;
    if (!p || fscanf(p, "%lf %ld", &v, &f)!=2) { fprintf(stderr,"child %s failed\n", mode.c_str()); return 2; }
    pclose(p); t[mode].push_back(v); fl[mode].push_back(f);
  }
  auto med=[](std::vector<double> v){ std::sort(v.begin(),v.end()); return v[v.size()/2]; };
  double raw = med(t["raw"]);
  for (auto& mode: modes) std::printf("%-16s median %8.1f us  (x%.2f of raw)  faults %.0f\n", mode.c_str(), med(t[mode]), med(t[mode])/raw, med(fl[mode]));
  if (!getenv("EXP_KEEP")) std::filesystem::remove_all(dir); else std::printf("kept %s\n", dir.c_str());
}
