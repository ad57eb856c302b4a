#include "core/system/units.hpp"
#include "core/cache/usage_counter.hpp"

#include "core/system/blocked_signal.hpp"
#include "core/cache/config.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {

namespace {

constexpr char k_magic[8] = {'K', 'J', 'I', 'T', 'U', 'S', 'E', '1'};
constexpr std::size_t k_size = 24;

std::optional<Usage> decode(const unsigned char* p, ssize_t n) {
  if (n != static_cast<ssize_t>(k_size) || std::memcmp(p, k_magic, sizeof k_magic) != 0) return std::nullopt;
  auto le = [](const unsigned char* q) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{q[i]} << (8 * i);
    return v;
  };
  return Usage{le(p + 8), le(p + 16)};
}

std::optional<Usage> read_fd(int fd) {
  unsigned char buf[k_size + 1];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  return decode(buf, n);
}

}  // namespace

std::optional<Usage> UsageCounter::Locked::read() const { return read_fd(m_lock.fd()); }

system::Result<void> UsageCounter::Locked::write(const Usage& usage) {
  unsigned char buf[k_size];
  std::memcpy(buf, k_magic, sizeof k_magic);
  for (int i = 0; i < 8; ++i) {
    buf[8 + i] = static_cast<unsigned char>(usage.entries >> (8 * i));
    buf[16 + i] = static_cast<unsigned char>(usage.bytes >> (8 * i));
  }
  system::BlockedSignal no_sigxfsz(SIGXFSZ);  // past RLIMIT_FSIZE: EFBIG, not death
  ssize_t n;
  do {
    n = ::pwrite(m_lock.fd(), buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof buf)) {
    return system::Failure{fmt::format("updating {}: {}", m_file.string(), n < 0 ? std::strerror(errno) : "short write")};
  }
  // A file longer than a counter (damaged, or written by something else) would read as no
  // counter forever, and every put would rescan the cache: cut it to the counter's size.
  if (::ftruncate(m_lock.fd(), static_cast<off_t>(sizeof buf)) != 0) {
    return system::Failure{fmt::format("updating {}: {}", m_file.string(), std::strerror(errno))};
  }
  return {};
}

UsageCounter::UsageCounter(int dir_fd, const std::string& dir, std::string name, system::FileMode mode)
    : m_file(system::join_path(dir, name)), m_mode(mode), m_dir_fd(dir_fd), m_dir(dir), m_name(std::move(name)) {}

system::Result<UsageCounter::Locked> UsageCounter::lock(std::chrono::milliseconds timeout) const {
  auto lock = m_dir_fd >= 0 ? system::FileLock::acquire_at(m_dir_fd, m_dir, m_name,
                                                   timeout, {}, timeout, system::FileLock::OnRelease::keep_file,
                                                   std::chrono::milliseconds(0), m_mode)
                            : system::FileLock::acquire(m_file, timeout, {}, timeout, system::FileLock::OnRelease::keep_file,
                                                std::chrono::milliseconds(0), m_mode);
  if (!lock) return lock.error();
  return Locked(std::move(*lock), m_file);
}

std::optional<Usage> UsageCounter::peek() const {
  const int fd = m_dir_fd >= 0 ? ::openat(m_dir_fd, m_name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                                : ::open(m_file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st{};
  std::optional<Usage> usage;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) usage = read_fd(fd);
  ::close(fd);
  return usage;
}

}  // namespace kjit::cache
