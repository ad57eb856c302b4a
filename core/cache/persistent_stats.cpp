#include "core/system/units.hpp"
#include "core/cache/persistent_stats.hpp"

#include "core/system/atomic_file.hpp"
#include "core/cache/config.hpp"
#include "core/system/file_io.hpp"
#include "core/system/file_lock.hpp"

#include <fmt/format.h>

#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
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

// A stats file is a few hundred bytes; anything past this is not one.
constexpr std::uint64_t k_max_size = 1 << 20;

// The file's text from its start (empty when it cannot be read: counts as zero).
std::string text_of(int fd) {
  std::string text;
  system::read_fd(fd, text, 4096, k_max_size);
  return text;
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

PersistentStats::PersistentStats(int dir_fd, const std::string& dir, std::string name, system::FileMode mode)
    : m_file(system::join_path(dir, name)), m_mode(mode), m_dir_fd(dir_fd), m_dir(dir), m_name(std::move(name)) {}

system::Result<void> PersistentStats::add(const StatsSnapshot& delta, std::chrono::milliseconds timeout) const {
  return update(&delta, timeout);
}

system::Result<void> PersistentStats::reset() const { return update(nullptr, std::chrono::seconds(5)); }

system::Result<void> PersistentStats::update(const StatsSnapshot* delta, std::chrono::milliseconds timeout) const {
  auto lock = m_dir_fd >= 0 ? system::FileLock::acquire_at(m_dir_fd, m_dir, m_name, timeout, {}, timeout,
                                                   system::FileLock::OnRelease::keep_file, std::chrono::milliseconds(0), m_mode)
                            : system::FileLock::acquire(m_file, timeout, {}, timeout, system::FileLock::OnRelease::keep_file,
                                                std::chrono::milliseconds(0), m_mode);
  if (!lock) return lock.error();
  StatsSnapshot totals;
  if (delta != nullptr) {
    totals = parse(text_of(lock->fd()));
    totals += *delta;
  }
  // The new totals replace the locked file whole (a reader needs no lock). The lock ends with the
  // rename: a waiter that then locks the replaced file sees that the path names another one
  // (FileLock::acquire checks) and locks the new file instead.
  auto written = [&]() -> system::Result<void> {
    if (m_dir_fd < 0) return system::write_file_atomically(m_file, format(totals), system::AtomicFile::Sync::no, m_mode);
    auto file = system::AtomicFile::create_at(m_dir_fd, m_dir, m_name, m_mode);
    if (!file) return file.error();
    if (auto w = file->write(format(totals)); !w) return w;
    return file->commit(system::AtomicFile::Sync::no);
  }();
  if (!written) return system::Failure{fmt::format("updating cache statistics: {}", written.error().message)};
  return {};
}

StatsSnapshot PersistentStats::read() const {
  // No lock: every update renames a whole file into place. Never through a link.
  const int fd = m_dir_fd >= 0 ? ::openat(m_dir_fd, m_name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                                : ::open(m_file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st{};
  StatsSnapshot stats;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) stats = parse(text_of(fd));
  ::close(fd);
  return stats;
}

}  // namespace kjit::cache
