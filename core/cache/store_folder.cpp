// cache::StoreFolder: the folder opened and checked now, or at the first write where that was
// deferred; the paths of its entries and locks.
#include "core/cache/store_folder.hpp"

#include "core/system/units.hpp"

#include <cerrno>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {

namespace {

// Whether `dir` is absent and a write will surely make it: its parent is a folder with a write
// bit, which this user may write and search (root passes any access check, so the bit counts:
// /proc has none). Anything else is opened at once, so that a folder kjit cannot use is said when
// the folder is made. The write still checks everything open_trusted_dir checks.
bool makeable_later(const std::string& dir) {
  struct stat st{};
  if (::lstat(dir.c_str(), &st) == 0 || errno != ENOENT) return false;
  std::string_view parent(dir);
  while (parent.size() > 1 && parent.back() == '/') parent.remove_suffix(1);
  const auto slash = parent.rfind('/');
  const std::string p = slash == std::string_view::npos ? std::string(".")
                        : slash == 0                    ? std::string("/")
                                                        : std::string(parent.substr(0, slash));
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0222) != 0 &&
         ::faccessat(AT_FDCWD, p.c_str(), W_OK | X_OK, AT_EACCESS) == 0;
}

}  // namespace

StoreFolder::StoreFolder(StoreConfig config)
    : m_config(std::move(config)), m_stats(m_config.stats != nullptr ? *m_config.stats : m_own_stats) {
  if (!m_config.create_when_writing || !makeable_later(m_config.dir)) (void)open_folder_now();
  m_fork = system::AtFork::add({[this] { m_open_mutex.lock(); }, [this] { m_open_mutex.unlock(); },
                                [this] { new (&m_open_mutex) std::mutex(); }});
}

system::Result<const TrustedDir*> StoreFolder::open_folder_now() {
  auto trusted = open_trusted_dir(m_config.dir, m_config.sharing, true);
  if (!trusted) {
    m_refused = trusted.error();
    return trusted.error();
  }
  m_dir_owner = std::move(*trusted);
  m_usage = std::make_unique<UsageCounter>(m_dir_owner->fd(), m_config.dir, "usage", m_dir_owner->file_mode());
  m_dir.store(m_dir_owner.get(), std::memory_order_release);
  return m_dir_owner.get();
}

system::Result<const TrustedDir*> StoreFolder::writable_dir() {
  if (const TrustedDir* d = dir()) return d;
  std::lock_guard lock(m_open_mutex);
  if (const TrustedDir* d = dir()) return d;
  if (m_refused) return *m_refused;
  return open_folder_now();  // deferred until now (create_when_writing)
}

std::optional<system::Failure> StoreFolder::refusal() const {
  std::lock_guard lock(m_open_mutex);
  return m_refused;
}

system::Result<void> StoreFolder::trusted() const {
  if (auto refused = refusal()) return *refused;
  return {};
}

std::string StoreFolder::path(std::string_view name) const { return system::join_path(m_config.dir, name); }

std::string StoreFolder::entry_file(const Key& key) const {
  // <dir>/<2 hex>/<30 hex>.kjit, built in one string.
  const std::string hex = key.hex();
  std::string out = path(std::string_view(hex).substr(0, 2));
  out.push_back('/');
  out.append(hex, 2, std::string::npos);
  out += k_entry_suffix;
  return out;
}

std::filesystem::path StoreFolder::lock_path(const Key& key) const { return path("locks/" + key.hex() + ".lock"); }

}  // namespace kjit::cache
