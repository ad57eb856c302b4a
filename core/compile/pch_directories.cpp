#include "core/compile/pch_directories.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kjit::compile {
namespace {

constexpr std::string_view k_prefix = "kjit-pch-";
constexpr const char* k_lock_name = ".lock";

// Folders of live objects, which may never be destroyed: an atexit handler removes those this
// process made (a forked child that exits leaves its parent's alone). Never freed: the handler
// may run after static destructors.
std::mutex g_live_mutex;
std::vector<std::pair<pid_t, std::string>>* g_live = nullptr;

void remove_live_at_exit() {
  std::lock_guard lock(g_live_mutex);
  std::error_code ec;
  for (const auto& [pid, root] : *g_live) {
    if (pid == ::getpid()) std::filesystem::remove_all(root, ec);
  }
  g_live->clear();
}

void track(const std::string& root) {
  std::lock_guard lock(g_live_mutex);
  if (g_live == nullptr) {
    g_live = new std::vector<std::pair<pid_t, std::string>>;
    std::atexit(remove_live_at_exit);
  }
  g_live->emplace_back(::getpid(), root);
}

void untrack(const std::string& root) {
  std::lock_guard lock(g_live_mutex);
  if (g_live) {
    std::erase_if(*g_live, [&](const auto& e) { return e.second == root; });
  }
}

std::filesystem::path temp_base() {
  std::error_code ec;
  auto tmp = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : tmp;
}

}  // namespace

PchDirectories::~PchDirectories() {
  if (m_root.empty()) return;
  if (m_owner_pid == ::getpid()) {
    std::error_code ec;
    std::filesystem::remove_all(m_root, ec);
    untrack(m_root.string());
  }
  if (m_lock_fd >= 0) ::close(m_lock_fd);
}

std::size_t PchDirectories::remove_abandoned(const std::filesystem::path& base) {
  std::size_t removed = 0;
  std::error_code ec;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (const auto& e : std::filesystem::directory_iterator(base, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code e2;
    if (name.rfind(k_prefix, 0) != 0 || !e.is_directory(e2) || e.is_symlink(e2)) continue;
    const std::filesystem::path lock = e.path() / k_lock_name;
    const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    bool abandoned = false;
    if (fd >= 0) {
      abandoned = ::flock(fd, LOCK_EX | LOCK_NB) == 0;  // its holder is gone
    } else if (errno == ENOENT) {
      // No lock file: being set up right now, or made by something else. Old ones only.
      auto written = std::filesystem::last_write_time(e.path(), e2);
      abandoned = !e2 && now - written > std::chrono::hours(1);
    }
    if (abandoned && std::filesystem::remove_all(e.path(), e2) > 0 && !e2) ++removed;
    if (fd >= 0) ::close(fd);  // releases the lock taken above
  }
  return removed;
}

void PchDirectories::make_root() {
  const std::filesystem::path base = m_base.empty() ? temp_base() : m_base;
  remove_abandoned(base);
  // The lock is held before the file shows up in the folder, so no other process can take the
  // new folder for an abandoned one.
  std::string lock_pattern = (base / ".kjit-pch-lock-XXXXXX").string();
  const int fd = ::mkostemp(lock_pattern.data(), O_CLOEXEC);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    const int err = errno;
    if (fd >= 0) {
      ::close(fd);
      ::unlink(lock_pattern.c_str());
    }
    throw IoError(fmt::format("creating a lock file for precompiled headers in {}: {}", base.string(),
                              std::strerror(err)));
  }
  std::string pattern = (base / (std::string(k_prefix) + "XXXXXX")).string();
  if (!::mkdtemp(pattern.data()) ||
      ::rename(lock_pattern.c_str(), (std::filesystem::path(pattern) / k_lock_name).c_str()) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(lock_pattern.c_str());
    std::error_code ec;
    std::filesystem::remove(pattern, ec);
    throw IoError(fmt::format("creating a private folder for precompiled headers in {}: {}", base.string(),
                              std::strerror(err)));
  }
  m_root = pattern;
  m_lock_fd = fd;
  m_owner_pid = ::getpid();
  track(m_root.string());
}

PchDirectories::Lease PchDirectories::acquire() {
  std::lock_guard lock(m_mutex);
  if (!m_root.empty() && m_owner_pid != ::getpid()) {
    // A forked child: the folder and its slots are the parent's, which goes on using them (two
    // processes writing one PCH file would spoil it). The child makes a folder of its own.
    if (m_lock_fd >= 0) ::close(m_lock_fd);  // the parent's descriptor keeps its lock
    m_lock_fd = -1;
    m_root.clear();
    m_busy.clear();
  }
  if (m_root.empty()) make_root();
  std::size_t slot = 0;
  while (slot < m_busy.size() && m_busy[slot]) ++slot;
  if (slot == m_busy.size()) m_busy.push_back(false);
  auto dir = m_root / fmt::format("{}", slot);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw IoError(fmt::format("creating the precompiled-header folder {}: {}", dir.string(), ec.message()));
  }
  m_busy[slot] = true;
  return Lease(*this, slot, dir);
}

std::filesystem::path PchDirectories::root() const {
  std::lock_guard lock(m_mutex);
  return m_root;
}

void PchDirectories::release(std::size_t slot) {
  // NVRTC adds a PCH file (~100-200 MB for <cub/...>) whenever the options differ from every
  // file it has, so a slot keeps only its newest few.
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(m_root / fmt::format("{}", slot), ec)) {
    if (e.path().extension() == ".pch") files.emplace_back(e.last_write_time(ec), e.path());
  }
  if (files.size() > k_files_per_slot) {
    std::sort(files.begin(), files.end());
    for (std::size_t i = 0; i + k_files_per_slot < files.size(); ++i) std::filesystem::remove(files[i].second, ec);
  }
  std::lock_guard lock(m_mutex);
  m_busy[slot] = false;
}

}  // namespace kjit::compile
