// kjit::write_file_atomically: system::write_file_atomically for the public API's users.
#include <kjit/error.hpp>
#include <kjit/tools/write_file.hpp>

#include "core/spi/system.hpp"

namespace kjit {

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  if (auto written = system::write_file_atomically(path, bytes); !written) throw IoError(written.error().message);
}

}  // namespace kjit
