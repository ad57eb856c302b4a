#include "core/compile/host_system_headers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace kjit::compile {
namespace {

// Subfolders of `dir`, sorted (a version's folders: the newest last); none when `dir` is not a folder.
std::vector<std::filesystem::path> subfolders(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> find_system_folders() {
  std::vector<std::filesystem::path> dirs;
  dirs.emplace_back("/usr/local/include");
  std::vector<std::filesystem::path> multiarch;
  for (const auto& d : subfolders("/usr/include")) {
    if (d.filename().string().find("-linux-") != std::string::npos) multiarch.push_back(d);
  }
  // libstdc++'s headers, the newest version first, as g++ searches them.
  const auto libstdcxx = subfolders("/usr/include/c++");
  for (auto it = libstdcxx.rbegin(); it != libstdcxx.rend(); ++it) {
    dirs.push_back(*it);
    for (const auto& m : multiarch) dirs.push_back(m / "c++" / it->filename());
  }
  for (const auto& m : multiarch) dirs.push_back(m);
  dirs.emplace_back("/usr/include");
  // GCC's own headers (stdarg.h, stddef.h, omp.h): /usr/lib/gcc/<triple>/<version>/include.
  for (const auto& triple : subfolders("/usr/lib/gcc")) {
    const auto versions = subfolders(triple);
    for (auto it = versions.rbegin(); it != versions.rend(); ++it) dirs.push_back(*it / "include");
  }
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& d : dirs) {
    if (std::filesystem::is_directory(d, ec)) out.push_back(d.string());
  }
  return out;
}

}  // namespace

const std::vector<std::string>& HostSystemHeaders::system_folders() {
  static const std::vector<std::string> folders = find_system_folders();
  return folders;
}

bool HostSystemHeaders::is_host_header(std::string_view spelling) {
  if (spelling.empty() || spelling.front() == '/' || spelling.find("..") != std::string_view::npos) return false;
  std::error_code ec;
  return std::any_of(system_folders().begin(), system_folders().end(), [&](const std::string& dir) {
    return std::filesystem::is_regular_file(std::filesystem::path(dir) / spelling, ec);
  });
}

std::vector<std::string> HostSystemHeaders::unopened(std::string_view log) {
  constexpr std::string_view marker = "cannot open source file \"";
  std::vector<std::string> out;
  for (std::size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = log.find('"', start);
    if (end == std::string_view::npos) break;
    std::string name(log.substr(start, end - start));
    if (is_host_header(name) && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

std::string_view HostSystemHeaders::served_text() {
  return "// kjit: a host system header NVRTC has not, served empty: only host code uses it (nvcc compiles\n"
         "// host code with the host's headers; kjit leaves host code out).\n";
}

std::string HostSystemHeaders::explain(const std::vector<std::string>& served) {
  if (served.empty()) return {};
  std::string list;
  for (const auto& s : served) list += fmt::format("{}<{}>", list.empty() ? "" : ", ", s);
  return fmt::format("kjit: host system headers served empty (NVRTC has none; nvcc's host compiler has them, and host "
                     "code alone uses them): {}\n",
                     list);
}

}  // namespace kjit::compile
