#include "core/system/atomic_file.hpp"

#include "core/system/blocked_signal.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <unistd.h>
#include <utility>

namespace kjit::system {

namespace {

std::string random_suffix() {
  static constexpr char k_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  // Seeded per thread; the pid is mixed in on every call because a forked child inherits the
  // generator's state (O_EXCL catches any collision anyway).
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::uint64_t bits = generator() ^ (static_cast<std::uint64_t>(getpid()) * 0x9E3779B97F4A7C15ull);
  std::string out(8, 'x');
  for (char& c : out) {
    c = k_chars[bits % (sizeof k_chars - 1)];
    bits /= (sizeof k_chars - 1);
  }
  return out;
}

}  // namespace

namespace {

// One attempt loop of create/create_at: the temporary `base`<random> in `dir_fd`.
Result<int> open_temp(int dir_fd, const std::string& base, std::string& name, FileMode mode,
                      const std::string& target_text, const std::string& folder_text) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = base + random_suffix();
    const int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode.mode);
    if (fd >= 0) {
      // The umask took bits away (a team cache's files are 0660): set the mode exactly.
      if (mode.exact) ::fchmod(fd, mode.mode);
      return fd;
    }
    if (errno == EEXIST || errno == EINTR) continue;
    return Failure{fmt::format("creating temporary for {} in {}: {}", target_text, folder_text, std::strerror(errno))};
  }
  return Failure{fmt::format("creating temporary for {}: no unused name after 100 attempts", target_text)};
}

}  // namespace

Result<AtomicFile> AtomicFile::create(const std::filesystem::path& target, FileMode mode) {
  const std::filesystem::path folder = target.parent_path();
  const std::string base = fmt::format("{}{}.", k_temp_prefix, target.filename().string());
  std::string name;
  const std::string prefix = folder.empty() ? std::string() : folder.string() + "/";
  auto fd = open_temp(AT_FDCWD, prefix + base, name, mode, target.string(),
                      folder.empty() ? std::string(".") : folder.string());
  if (!fd) return fd.error();
  return AtomicFile(target, name, *fd, AT_FDCWD, target.string(), name);
}

Result<AtomicFile> AtomicFile::create_at(int dir_fd, const std::string& dir, const std::string& name, FileMode mode) {
  const std::string target = fmt::format("{}/{}", dir, name);
  const int own = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return Failure{fmt::format("creating temporary for {}: {}", target, std::strerror(errno))};
  std::string temp_name;
  auto fd = open_temp(own, fmt::format("{}{}.", k_temp_prefix, name), temp_name, mode, target, dir);
  if (!fd) {
    ::close(own);
    return fd.error();
  }
  return AtomicFile(target, fmt::format("{}/{}", dir, temp_name), *fd, own, name, temp_name);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_target(std::move(other.m_target)),
      m_temp(std::move(other.m_temp)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_dir_fd(std::exchange(other.m_dir_fd, -1)),
      m_target_name(std::move(other.m_target_name)),
      m_temp_name(std::move(other.m_temp_name)),
      m_committed(other.m_committed),
      m_failed(other.m_failed) {
  other.m_committed = true;  // the moved-from object owns nothing
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    if (m_dir_fd >= 0) ::close(m_dir_fd);
    m_target = std::move(other.m_target);
    m_temp = std::move(other.m_temp);
    m_fd = std::exchange(other.m_fd, -1);
    m_dir_fd = std::exchange(other.m_dir_fd, -1);
    m_target_name = std::move(other.m_target_name);
    m_temp_name = std::move(other.m_temp_name);
    m_committed = other.m_committed;
    m_failed = other.m_failed;
    other.m_committed = true;
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  discard();
  if (m_dir_fd >= 0) ::close(m_dir_fd);
}

Failure AtomicFile::fail(std::string message) {
  m_failed = true;
  discard();
  return Failure{std::move(message)};
}

void AtomicFile::discard() {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
  if (!m_committed && !m_temp_name.empty()) {
    ::unlinkat(m_dir_fd, m_temp_name.c_str(), 0);
    m_temp_name.clear();
  }
}

Result<void> AtomicFile::write(std::string_view bytes) {
  if (m_committed || m_failed || m_fd < 0) {
    return Failure{fmt::format("writing {}: the temporary file is no longer open", m_target.string())};
  }
  // Past RLIMIT_FSIZE the write fails with EFBIG instead of the process dying of SIGXFSZ.
  BlockedSignal no_sigxfsz(SIGXFSZ);
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(m_fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(fmt::format("writing {}: {}", m_temp.string(), std::strerror(errno)));
    }
    if (n == 0) {
      return fail(fmt::format("writing {}: write returned 0", m_temp.string()));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

Result<void> AtomicFile::commit(Sync sync) {
  if (m_committed || m_failed || m_fd < 0) {
    return Failure{fmt::format("committing {}: nothing to commit (already committed or failed)", m_target.string())};
  }
  if (sync == Sync::yes && ::fsync(m_fd) != 0) {
    return fail(fmt::format("syncing {}: {}", m_temp.string(), std::strerror(errno)));
  }
  // close() reports delayed write errors on some file systems (NFS): check it.
  const int fd = std::exchange(m_fd, -1);
  if (::close(fd) != 0 && errno != EINTR) {
    return fail(fmt::format("closing {}: {}", m_temp.string(), std::strerror(errno)));
  }
  if (::renameat(m_dir_fd, m_temp_name.c_str(), m_dir_fd, m_target_name.c_str()) != 0) {
    return fail(fmt::format("rename from {} to {} failed: {}", m_temp.string(), m_target.string(),
                            std::strerror(errno)));
  }
  m_committed = true;
  return {};
}

}  // namespace kjit::system
