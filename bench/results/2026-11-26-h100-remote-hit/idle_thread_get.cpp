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
  redisContext* c = redisConnectUnixWithTimeout("/tmp/rb/r.sock", tv);
  auto* r = static_cast<redisReply*>(redisCommand(c, "GET %s", "kjit:7ed252367456317bb866e21fe79311d7"));
  auto t1 = std::chrono::steady_clock::now();
  std::printf("%d ", (int)std::chrono::duration<double, std::micro>(t1 - t0).count());
  freeReplyObject(r); redisFree(c);
  if (extra) { { std::lock_guard l(m); stop = true; } cv.notify_one(); t.join(); }
}
