#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kjit {

Program read_program(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError(fmt::format("reading CUDA source {}: {}", file.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IoError(fmt::format("reading CUDA source {}: read failed", file.string()));
  auto dir = file.parent_path();
  return Program(file.string(), ss.str()).directory(dir.empty() ? std::filesystem::path(".") : dir);
}

}  // namespace kjit
