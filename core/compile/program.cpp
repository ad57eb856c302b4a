#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include "core/base/source_file.hpp"

namespace kjit {

Program read_program(const std::filesystem::path& file) {
  std::string source = base::read_text_file(file, "CUDA source");
  auto dir = file.parent_path();
  return Program(file.string(), std::move(source)).directory(dir.empty() ? std::filesystem::path(".") : dir);
}

}  // namespace kjit
