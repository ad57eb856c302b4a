// kjit::system::Background: the one background thread of a Runtime (its compile service's), which
// does what the request path hands over so that a request returns as soon as its result is
// known:
//   - jobs, run in order: a remote hit's backfill to the disk, a compile's usage accounting and
//     eviction, the stats flush, the remote tier's writes and lock releases;
//   - recurring calls: the lock heartbeats of every compile in flight (heartbeat(): the lock
//     file's mtime now, then every period) and the remote tier's lock refreshes.
// The thread starts on first need (the first job or recurring call), or when start_now() asks. Jobs wait in a
// bounded queue (max_jobs, max_bytes): a job that does not fit is dropped at once (its drop() is
// called instead of run(): the caller counts it). finish(bound) runs what is queued for at most
// `bound`, drops the rest, and stops the thread; the destructor calls it with Limits::exit_bound,
// and so does an atexit handler (registered by the first object, never at load time) for objects
// never destroyed (the global Runtime), which then stop taking work. Thread-safe. No CUDA; never throws
// past allocation failures; jobs must not throw (one that does is counted as done).
// fork(): a child gets every Background fresh (cache/at_fork): no thread (its own starts on its
// first need), none of the parent's queued jobs or recurring calls (the parent's: its worker runs
// them; their drop() is not called), unlocked locks; so its jobs run and its exit never waits
// for the parent's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace kjit::system {

class Background {
public:
  struct Limits {
    std::size_t max_jobs = 1024;               // queued jobs
    std::uint64_t max_bytes = 512ull << 20;    // the memory queued jobs hold (Job::bytes)
    std::chrono::milliseconds exit_bound{std::chrono::seconds(5)};  // finish() at destruction and at exit
  };

  struct Job {
    std::function<void()> run;
    std::function<void()> drop;  // instead of run() when the job never runs (may be empty)
    std::uint64_t bytes = 0;     // what it holds, for the queue's bound
    const void* owner = nullptr; // forget(owner) drops it
  };

  // A recurring call; it stops when this goes (after a call in progress on the worker ends).
  class Recurring {
  public:
    Recurring() = default;
    Recurring(Recurring&& other) noexcept : m_bg(other.m_bg), m_id(other.m_id) { other.m_bg = nullptr; }
    Recurring& operator=(Recurring&& other) noexcept;
    Recurring(const Recurring&) = delete;
    Recurring& operator=(const Recurring&) = delete;
    ~Recurring() { stop(); }
    void stop();
    bool active() const { return m_bg != nullptr; }

  private:
    friend class Background;
    Recurring(Background* bg, std::uint64_t id) : m_bg(bg), m_id(id) {}
    Background* m_bg = nullptr;
    std::uint64_t m_id = 0;
  };

  // The period of a lock heartbeat: a waiter (LockWatch) sees the lock file's mtime move this often.
  static constexpr std::chrono::milliseconds k_heartbeat_period{1000};

  Background() : Background(Limits{}) {}
  explicit Background(Limits limits);
  ~Background();  // finish(limits.exit_bound)
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Queues `job`; false when it was dropped (queue full, or finished): its drop() was called here.
  bool post(Job job);
  // fn() every `period` on the worker (the first call one period from now), until the handle goes.
  Recurring every(std::chrono::milliseconds period, std::function<void()> fn);
  // Proof of progress for a held lock: the lock file's mtime set now (on this thread), then every
  // `period` on the worker, until the handle goes. The descriptor must outlive the handle.
  Recurring heartbeat(int fd, std::chrono::milliseconds period = k_heartbeat_period);

  // Starts the thread now if it is not running (and finish() has not stopped it): a Runtime that
  // prepares NVRTC does so before NVRTC's open begins, since a thread made while the loader maps
  // and relocates a library waits for it (glibc's TLS lock; 6-11 ms for libnvrtc), and a request's
  // first job would otherwise make it then.
  void start_now();
  // Waits until no job is queued or running.
  void drain();
  // Drops the queued jobs of `owner` and waits for its running one: an owner going away calls it.
  void forget(const void* owner);
  // Runs what is queued for at most `bound`, drops what is left, stops the thread; later posts
  // are dropped. Returns the number of jobs dropped. Idempotent.
  std::size_t finish(std::chrono::milliseconds bound);

  // What this object did (for tests and reports).
  struct Counts {
    std::uint64_t run = 0;       // jobs run
    std::uint64_t dropped = 0;   // jobs dropped (full queue, at the bound, forgotten)
    std::uint64_t recurring_calls = 0;
    bool started = false;        // the thread was ever started
  };
  Counts counts() const;

  const Limits& limits() const { return m_limits; }

private:
  struct Periodic {
    std::chrono::milliseconds period;
    std::chrono::steady_clock::time_point due;
    std::function<void()> fn;
  };
  using Clock = std::chrono::steady_clock;

  void start();  // with m_mutex held
  void loop();
  void unregister(std::uint64_t id);
  static void finish_all_at_exit();
  // fork(): every live object's lock taken (prepare), released (parent), made fresh (child).
  static void lock_all_for_fork();
  static void unlock_all_after_fork();
  static void reset_all_in_child();
  void reset_in_child();

  Limits m_limits;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;   // the worker: work, an earlier due time, or stop
  std::condition_variable m_idle;   // drain(), forget(), ~Recurring: a job or call ended
  std::deque<Job> m_queue;
  std::uint64_t m_queue_bytes = 0;
  std::map<std::uint64_t, Periodic> m_periodic;
  std::uint64_t m_next_id = 1;
  std::uint64_t m_calling = 0;        // the recurring call in progress, 0 when none
  const void* m_running_owner = nullptr;
  bool m_running = false;             // a job in progress
  bool m_stop = false;                // finish(): no more work
  Clock::time_point m_sleep_until = Clock::time_point::max();  // when the worker wakes next
  Counts m_counts;
  std::thread m_thread;
  std::thread::id m_thread_id;
};

}  // namespace kjit::system
