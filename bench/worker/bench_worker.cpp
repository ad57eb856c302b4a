// bench_worker: what the request path of a compile (or a link) spends on the store's steps
// besides publishing its own entry, with the one background worker (system::Background) against
// the same steps done inline, as they were before it (peer: a heartbeat thread started and joined
// per compile, the usage record and the stats flush on the request path, a remote hit's backfill
// written before the hit returns). Medians of N, alternating; the worker is warm (a Runtime's
// first compile starts it). CPU only; links cache/ alone. Usage: bench_worker [runs] [entry bytes] [cpu]
// (cpu: the calling thread's CPU time, CLOCK_THREAD_CPUTIME_ID, instead of the wall clock: what the
// request path itself spends, apart from waiting on a loaded machine's disk or scheduler).
#include "core/system/background.hpp"
#include "core/cache/store.hpp"
#include "core/cache/store_stats.hpp"

#include "bench_util.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <time.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace kjit::cache;
using namespace kjit::system;
using kjit::bench_util::median;

bool g_cpu = false;

double now_us() {
  if (!g_cpu) return kjit::bench_util::now_us();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

namespace {

// The heartbeat as it was: a thread per held lock, started and joined.
class ThreadHeartbeat {
public:
  explicit ThreadHeartbeat(int fd) : m_fd(fd) {
    ::futimens(m_fd, nullptr);
    m_thread = std::thread([this] {
      std::unique_lock lock(m_mutex);
      while (!m_wake.wait_for(lock, std::chrono::seconds(1), [this] { return m_stop; })) ::futimens(m_fd, nullptr);
    });
  }
  ~ThreadHeartbeat() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_wake.notify_one();
    m_thread.join();
  }

private:
  int m_fd;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::thread m_thread;
};

Key key_of(std::uint64_t i) { return Hasher(1).field("bench-worker", i).finish(); }

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  const std::size_t entry_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 5000;
  g_cpu = argc > 3 && std::string(argv[3]) == "cpu";
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("kjit-bench-worker-{}", ::getpid());
  Store store({dir.string()});
  StoreStats stats(store.folder());
  if (!store.folder()->trusted()) {
    std::fprintf(stderr, "bench_worker: %s\n", store.folder()->trusted().error().message.c_str());
    return 2;
  }
  Background bg;
  bg.post({[] {}});  // warm: a Runtime's worker is started by its first compile
  bg.drain();

  std::vector<double> hb_old, hb_new, put_old, put_new, flush_old, flush_new, back_old, back_new, lock_us;
  std::uint64_t next = 0;
  for (int i = 0; i < runs; ++i) {
    const Key key = key_of(next++);
    Entry e;
    e.set(SectionKind::cubin, std::string(entry_bytes, static_cast<char>('a' + i % 26)));
    const std::string bytes = serialize(key, e);
    double t0 = now_us();
    auto lock = store.lock(key, std::chrono::milliseconds(1000));
    lock_us.push_back(now_us() - t0);
    if (!lock) return 2;
    // Heartbeat: started when the lock is taken, stopped after the compile.
    t0 = now_us();
    { ThreadHeartbeat beat(lock->fd()); }
    hb_old.push_back(now_us() - t0);
    t0 = now_us();
    { auto beat = bg.heartbeat(lock->fd()); }
    hb_new.push_back(now_us() - t0);
    // The own entry: published and counted inline, or published and counted by the worker.
    const Key key2 = key_of(next++);
    const std::string bytes2 = serialize(key2, e);
    if (i % 2 == 0) {
      t0 = now_us();
      store.put_bytes(key, bytes);
      put_old.push_back(now_us() - t0);
      t0 = now_us();
      PutResult p = store.put_bytes(key2, bytes2, Store::Accounting::deferred);
      bg.post({[&store, c = std::move(p.change)] { store.account(c); }});
      put_new.push_back(now_us() - t0);
    } else {
      t0 = now_us();
      PutResult p = store.put_bytes(key2, bytes2, Store::Accounting::deferred);
      bg.post({[&store, c = std::move(p.change)] { store.account(c); }});
      put_new.push_back(now_us() - t0);
      t0 = now_us();
      store.put_bytes(key, bytes);
      put_old.push_back(now_us() - t0);
    }
    lock->release();
    bg.drain();
    // The stats flush after a compile.
    store.stats().compiles.fetch_add(1);
    t0 = now_us();
    stats.flush();
    flush_old.push_back(now_us() - t0);
    store.stats().compiles.fetch_add(1);
    t0 = now_us();
    bg.post({[&stats] { stats.flush(); }});
    flush_new.push_back(now_us() - t0);
    bg.drain();
    // A remote hit's backfill: written before the hit returns, or handed over with its bytes.
    const Key key3 = key_of(next++), key4 = key_of(next++);
    const std::string bytes3 = serialize(key3, e);
    std::string bytes4 = serialize(key4, e);
    t0 = now_us();
    store.put_bytes(key3, bytes3);
    back_old.push_back(now_us() - t0);
    t0 = now_us();
    const std::uint64_t size = bytes4.size();
    bg.post({[&store, key4, b = std::move(bytes4)] { store.put_bytes(key4, b); }, {}, size});
    back_new.push_back(now_us() - t0);
    bg.drain();
  }
  std::printf("bench_worker: %d runs, %zu-byte entries, medians in us of %s (inline before / handed to the worker)\n",
              runs, entry_bytes, g_cpu ? "the calling thread's CPU time" : "wall time");
  std::printf("  per-key lock (both)            %8.1f\n", median(lock_us));
  std::printf("  heartbeat start + stop         %8.1f / %8.1f\n", median(hb_old), median(hb_new));
  std::printf("  own entry write (+ usage)      %8.1f / %8.1f\n", median(put_old), median(put_new));
  std::printf("  stats flush                    %8.1f / %8.1f\n", median(flush_old), median(flush_new));
  std::printf("  remote hit's backfill          %8.1f / %8.1f\n", median(back_old), median(back_new));
  const double before = median(hb_old) + median(put_old) + median(flush_old);
  const double after = median(hb_new) + median(put_new) + median(flush_new);
  std::printf("  a compile's store steps        %8.1f / %8.1f   (heartbeat + write + flush; lock and release aside)\n",
              before, after);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
