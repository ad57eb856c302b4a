// kjit_cache_file_io: a real process that reads and writes files with cache/file_io, for the
// tests of the one reader and the one atomic writer (SIGKILL mid-write, an unprivileged user).
//
//   kjit_cache_file_io loop PATH SIZE FIRST
//       forever: write versions FIRST, FIRST+1, ... of PATH (test::versioned_content, SIZE bytes)
//       with write_file_atomically, to be SIGKILLed by the test. Exit 1 when a write fails.
//   kjit_cache_file_io write PATH SIZE N
//       writes version N of PATH once. Exit 0; 1 with the failure's message on stdout.
//   kjit_cache_file_io read PATH
//       reads PATH with read_file. Exit 0 with its size on stdout; 1 with its message().
#include "core/system/file_io.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <cstdio>
#include <string>

using namespace kjit;

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string command = argv[1];
  const std::string path = argv[2];
  if (command == "loop" && argc == 5) {
    const std::size_t size = std::stoull(argv[3]);
    for (std::uint64_t n = std::stoull(argv[4]);; ++n) {
      if (auto written = system::write_file_atomically(path, test::versioned_content(n, size)); !written) {
        std::printf("%s\n", written.error().message.c_str());
        return 1;
      }
    }
  }
  if (command == "write" && argc == 5) {
    auto written = system::write_file_atomically(path, test::versioned_content(std::stoull(argv[4]), std::stoull(argv[3])));
    if (written) return 0;
    std::printf("%s\n", written.error().message.c_str());
    return 1;
  }
  if (command == "read" && argc == 3) {
    const system::FileContent f = system::read_file(path);
    if (f.ok()) {
      std::printf("%zu\n", f.bytes.size());
      return 0;
    }
    std::printf("%s\n", f.message().c_str());
    return 1;
  }
  return 2;
}
