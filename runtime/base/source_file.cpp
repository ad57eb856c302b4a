#include "runtime/base/source_file.hpp"

#include <kjit/error.hpp>

#include "cache/config.hpp"
#include "runtime/base/environment.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kjit::base {

namespace {

bool is_standard_input(const std::filesystem::path& path) {
  return path == "-" || path == "/dev/stdin" || path == "/dev/fd/0" || path == "/proc/self/fd/0";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

std::string FileContent::why() const { return detail.empty() ? std::string(std::strerror(error)) : detail; }

std::uint64_t max_source_size() {
  return env_size(Env::max_source_size).value_or(k_default_max_source_size);
}

FileContent read_file(const std::filesystem::path& path) { return read_file(path, max_source_size()); }

FileContent read_file(const std::filesystem::path& path, std::uint64_t max_size) {
  FileContent out;
  const bool stdin_ = is_standard_input(path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway).
  const int fd = path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (stdin_ ? 0 : O_NONBLOCK));
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    out.error = errno;
    ::close(fd);
    return out;
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    out.error = EISDIR;
    return out;
  }
  if (!S_ISREG(st.st_mode) && !stdin_) {
    ::close(fd);
    out.error = EINVAL;
    out.detail = "not a regular file (a FIFO, device or socket); kjit reads sources, headers and manifests from "
                 "regular files or standard input";
    return out;
  }
  if (!stdin_ && (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)) {
    out.error = errno;
    ::close(fd);
    return out;
  }
  auto too_large = [&] {
    out.error = EFBIG;
    out.detail = fmt::format("larger than {} (KJIT_MAX_SOURCE_SIZE)", size_text(max_size));
    out.bytes.clear();
    out.bytes.shrink_to_fit();
  };
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_size) {
    ::close(fd);
    too_large();
    return out;
  }
  // The size from fstat is a hint: a file that grows or shrinks meanwhile is read to its end, but
  // never past max_size + 1 bytes (the byte that says it is too large).
  const std::uint64_t limit = max_size == std::numeric_limits<std::uint64_t>::max() ? max_size : max_size + 1;
  std::size_t capacity = st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096;
  capacity = static_cast<std::size_t>(std::min<std::uint64_t>(capacity, limit));
  out.bytes.resize(std::max<std::size_t>(capacity, 1));
  std::size_t done = 0;
  for (;;) {
    if (done == out.bytes.size()) {
      if (done >= limit) break;
      out.bytes.resize(static_cast<std::size_t>(std::min<std::uint64_t>(out.bytes.size() * 2ull, limit)));
    }
    const ssize_t n = ::read(fd, out.bytes.data() + done, out.bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.error = errno;
      out.bytes.clear();
      break;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (out.ok() && done > max_size) {
    too_large();
    return out;
  }
  if (out.ok()) out.bytes.resize(done);
  return out;
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  FileContent f = read_file(path);
  if (!f.ok()) throw IoError(fmt::format("reading {} {}: {}", what, path.string(), f.why()));
  check_no_nul(f.bytes, what, path.string());
  return std::move(f.bytes);
}

void check_no_nul(std::string_view text, std::string_view what, std::string_view name) {
  const auto* nul = static_cast<const char*>(std::memchr(text.data(), '\0', text.size()));
  if (nul == nullptr) return;
  throw UsageError(fmt::format("{} {} has a NUL byte at offset {} (of {} bytes); NVRTC would compile only what "
                               "comes before it, so kjit refuses it", what, name, nul - text.data(), text.size()));
}

}  // namespace kjit::base
