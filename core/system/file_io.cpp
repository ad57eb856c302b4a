#include "core/system/file_io.hpp"

#include "core/system/unique_fd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::system {

namespace {

bool is_standard_input(const std::filesystem::path& path) {
  return path == "-" || path == "/dev/stdin" || path == "/dev/fd/0" || path == "/proc/self/fd/0";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// A stream or device (/dev/stdout, a FIFO): written in place, in full.
Result<void> write_in_place(const std::filesystem::path& path, std::string_view bytes) {
  const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) return Failure{fmt::format("opening {} for writing: {}", path.string(), std::strerror(errno))};
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Failure{fmt::format("writing {}: {}", path.string(), n < 0 ? std::strerror(errno) : "write returned 0")};
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

std::string FileContent::why() const { return detail.empty() ? std::string(std::strerror(error)) : detail; }

std::string FileContent::message() const { return fmt::format("reading {}: {}", path, why()); }

int read_fd(int fd, std::string& out, std::uint64_t size_hint, std::uint64_t limit) {
  const std::uint64_t first = std::min(size_hint, limit);
  out.resize(static_cast<std::size_t>(std::max<std::uint64_t>(first, 1)));
  std::size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (done >= limit) break;
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(out.size() * 2ull, limit)));
    }
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      out.clear();
      return err;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return 0;
}

FileContent read_file(const std::filesystem::path& path, std::uint64_t max_size) {
  FileContent out;
  out.path = path.string();
  const bool stdin_ = is_standard_input(path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway).
  const UniqueFd fd(path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (stdin_ ? 0 : O_NONBLOCK)));
  if (fd.get() < 0) {
    out.error = errno;
    return out;
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) {
    out.error = errno;
    return out;
  }
  if (S_ISDIR(st.st_mode)) {
    out.error = EISDIR;
    return out;
  }
  if (!S_ISREG(st.st_mode) && !stdin_) {
    out.error = EINVAL;
    out.detail = "not a regular file (a FIFO, device or socket); kjit reads regular files or standard input";
    return out;
  }
  if (!stdin_ && (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0)) {
    out.error = errno;
    return out;
  }
  const auto too_large = [&] {
    out.error = EFBIG;
    out.detail = fmt::format("larger than {}", size_text(max_size));
    out.bytes.clear();
    out.bytes.shrink_to_fit();
    return out;
  };
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_size) return too_large();
  // The size from fstat is a hint: a file that grows or shrinks meanwhile is read to its end, but
  // never past max_size + 1 bytes (the byte that says it is too large).
  const std::uint64_t limit = max_size == k_no_size_limit ? max_size : max_size + 1;
  const std::uint64_t hint = st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) + 1 : 4096;
  out.error = read_fd(fd.get(), out.bytes, hint, limit);
  if (out.ok() && out.bytes.size() > max_size) return too_large();
  return out;
}

Result<void> write_file_atomically(const std::filesystem::path& path, std::string_view bytes, AtomicFile::Sync sync,
                                   FileMode mode) {
  std::filesystem::path target = path;
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return write_in_place(path, bytes);
    struct stat link{};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      // The link stays; what it points to gets the new content.
      if (char* real = ::realpath(path.c_str(), nullptr)) {
        target = real;
        std::free(real);
      }
    }
  }
  auto file = AtomicFile::create(target, mode);
  if (!file) return file.error();
  if (auto written = file->write(bytes); !written) return written;
  return file->commit(sync);
}

}  // namespace kjit::system
