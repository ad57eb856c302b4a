// A bare hiredis GET in a fresh process, alone or with one idle thread started first (no GPU, no
// kjit): why a remote hit's worker does not start while its GET waits (docs/performance.md).
//   bench_idle_thread_get [thread] [SOCKET] [KEY]   prints the GET's microseconds
// SOCKET: a redis-server's unix socket (default /tmp/rb/r.sock); KEY: a key on it. The figures of
// 2026-11-26 on the 2-core VM are bench/results/2026-11-26-h100-remote-hit/idle_thread_get.txt.
#include <hiredis/hiredis.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <mutex>
#include <condition_variable>
int main(int argc, char** argv) {
  bool extra = argc > 1 && std::strcmp(argv[1], "thread") == 0;
  std::mutex m; std::condition_variable cv; bool stop = false;
  auto t0 = std::chrono::steady_clock::now();
  std::thread t;
  if (extra) t = std::thread([&] { std::unique_lock l(m); cv.wait(l, [&] { return stop; }); });
  timeval tv{1, 0};
  const char* socket = argc > 2 ? argv[2] : "/tmp/rb/r.sock";
  const char* key = argc > 3 ? argv[3] : "kjit:7ed252367456317bb866e21fe79311d7";
  redisContext* c = redisConnectUnixWithTimeout(socket, tv);
  if (c == nullptr || c->err) {
    std::fprintf(stderr, "connecting to %s: %s\n", socket, c ? c->errstr : "out of memory");
    return 1;
  }
  auto* r = static_cast<redisReply*>(redisCommand(c, "GET %s", key));
  auto t1 = std::chrono::steady_clock::now();
  std::printf("%d ", (int)std::chrono::duration<double, std::micro>(t1 - t0).count());
  freeReplyObject(r); redisFree(c);
  if (extra) { { std::lock_guard l(m); stop = true; } cv.notify_one(); t.join(); }
}
