// cache::StoreNotes: a note reached from the checked folder's descriptor like everything else in it.
// A note is no entry: the scans of list, verify, prune and clear never look at it.
#include "core/cache/store_notes.hpp"

#include "core/system/atomic_file.hpp"
#include "core/system/file_io.hpp"
#include "core/system/unique_fd.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {
namespace {

constexpr std::uint64_t k_max_note_size = 1 << 20;

system::Result<void> check_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." || name == "locks" ||
      name == "usage" || name == "stats" || name == "CACHEDIR.TAG" || name.size() == 2 ||
      name.starts_with(system::AtomicFile::k_temp_prefix)) {
    return system::Failure{fmt::format("\"{}\" cannot name a note in a cache folder", name)};
  }
  return {};
}

}  // namespace

system::Result<std::optional<std::string>> StoreNotes::read(const std::string& name) const {
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) {
    if (auto refused = m_folder->refusal()) return *refused;
    return std::optional<std::string>();  // the folder is not made yet: no note
  }
  if (auto ok = check_name(name); !ok) return ok.error();
  const std::string path = m_folder->path(name);
  const system::UniqueFd fd(::openat(top->fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    if (errno == ELOOP) return system::Failure{fmt::format("{} is a symbolic link; kjit does not follow links inside its cache", path)};
    return system::Failure{fmt::format("reading {}: {}", path, std::strerror(errno))};
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return system::Failure{fmt::format("reading {}: {}", path, std::strerror(errno))};
  if (!S_ISREG(st.st_mode)) return system::Failure{fmt::format("{} is not a regular file; not read", path)};
  if (auto ok = top->check(fd.get(), st, path); !ok) return system::Failure{fmt::format("{}; not used", ok.error().message)};
  if (static_cast<std::uint64_t>(st.st_size) > k_max_note_size) {
    return system::Failure{fmt::format("{} is larger than a note of kjit's can be ({} bytes); not read", path, st.st_size)};
  }
  std::string bytes;
  if (const int err = system::read_fd(fd.get(), bytes, static_cast<std::uint64_t>(st.st_size), k_max_note_size); err != 0) {
    return system::Failure{fmt::format("reading {}: {}", path, std::strerror(err))};
  }
  return std::optional<std::string>(std::move(bytes));
}

system::Result<void> StoreNotes::write(const std::string& name, std::string_view bytes) {
  if (auto ok = check_name(name); !ok) return ok;
  const auto top = m_folder->writable_dir();
  if (!top) return top.error();
  auto file = system::AtomicFile::create_at((*top)->fd(), m_folder->config().dir, name, (*top)->file_mode());
  if (!file) return file.error();
  if (auto written = file->write(bytes); !written) return written;
  return file->commit(system::AtomicFile::Sync::no);
}

system::Result<void> StoreNotes::remove(const std::string& name) {
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) {
    if (auto refused = m_folder->refusal()) return *refused;
    return {};  // the folder is not made yet: nothing to remove
  }
  if (auto ok = check_name(name); !ok) return ok;
  if (::unlinkat(top->fd(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return system::Failure{fmt::format("removing {}: {}", m_folder->path(name), std::strerror(errno))};
  }
  return {};
}

}  // namespace kjit::cache
