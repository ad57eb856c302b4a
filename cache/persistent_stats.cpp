#include "cache/persistent_stats.hpp"

#include "cache/blocked_signal.hpp"
#include "cache/file_lock.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace kjit::cache {

namespace {

struct Field {
  std::string_view name;
  std::uint64_t StatsSnapshot::*member;
};

// One line per counter, named as in KJIT_CACHE_COUNTERS ("hits 12").
constexpr Field k_fields[] = {
#define KJIT_COUNTER_FIELD(name) {#name, &StatsSnapshot::name},
    KJIT_CACHE_COUNTERS(KJIT_COUNTER_FIELD)
#undef KJIT_COUNTER_FIELD
};

std::string read_fd(int fd) {
  std::string out;
  char buf[4096];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    offset += n;
  }
  return out;
}

}  // namespace

std::string PersistentStats::format(const StatsSnapshot& stats) {
  std::string out;
  for (const auto& f : k_fields) out += fmt::format("{} {}\n", f.name, stats.*f.member);
  return out;
}

StatsSnapshot PersistentStats::parse(std::string_view text) {
  StatsSnapshot stats;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const auto space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, space), number = line.substr(space + 1);
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size()) continue;
    for (const auto& f : k_fields) {
      if (f.name == name) stats.*f.member = value;
    }
  }
  return stats;
}

Result<void> PersistentStats::add(const StatsSnapshot& delta, std::chrono::milliseconds timeout) const {
  return update(&delta, timeout);
}

Result<void> PersistentStats::reset() const { return update(nullptr, std::chrono::seconds(5)); }

Result<void> PersistentStats::update(const StatsSnapshot* delta, std::chrono::milliseconds timeout) const {
  auto lock = FileLock::acquire(m_file, timeout, {}, timeout, FileLock::OnRelease::keep_file,
                                std::chrono::milliseconds(0), m_mode);
  if (!lock) return lock.error();
  StatsSnapshot totals;
  if (delta != nullptr) {
    totals = parse(read_fd(lock->fd()));
    totals += *delta;
  }
  const std::string text = format(totals);
  BlockedSignal no_sigxfsz(SIGXFSZ);  // past RLIMIT_FSIZE: EFBIG, not death
  ssize_t n;
  do {
    n = ::pwrite(lock->fd(), text.data(), text.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size()) || ::ftruncate(lock->fd(), static_cast<off_t>(text.size())) != 0) {
    return Failure{fmt::format("updating cache statistics {}: {}", m_file.string(), std::strerror(errno))};
  }
  return {};
}

StatsSnapshot PersistentStats::read() const {
  const int fd = ::open(m_file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  // A shared lock keeps us from reading half of a rewrite; give up waiting after a second.
  for (int i = 0; i < 200 && ::flock(fd, LOCK_SH | LOCK_NB) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  StatsSnapshot stats = parse(read_fd(fd));
  ::close(fd);
  return stats;
}

}  // namespace kjit::cache
