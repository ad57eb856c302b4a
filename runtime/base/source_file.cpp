#include "runtime/base/source_file.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kjit::base {

FileContent read_file(const std::filesystem::path& path) {
  FileContent out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    out.error = EISDIR;
    return out;
  }
  // The size from fstat is a hint: a file that grows or shrinks meanwhile is read to its end.
  std::size_t capacity = st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096;
  out.bytes.resize(capacity);
  std::size_t done = 0;
  for (;;) {
    if (done == out.bytes.size()) out.bytes.resize(out.bytes.size() * 2);
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
  if (out.ok()) out.bytes.resize(done);
  return out;
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  FileContent f = read_file(path);
  if (!f.ok()) throw IoError(fmt::format("reading {} {}: {}", what, path.string(), std::strerror(f.error)));
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
