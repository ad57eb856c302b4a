// Writes a seed corpus for fuzz_cache_parse into the folder given: valid entries of several
// shapes, and a few near-misses (truncated, flipped, empty).
#include "core/cache/entry.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace kjit::cache;
using namespace kjit::system;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_cache_parse_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int n = 0;
  auto write = [&](const std::string& bytes) {
    std::ofstream(dir / ("seed" + std::to_string(n++)), std::ios::binary) << bytes;
  };
  Entry full;
  full.set(SectionKind::cubin, std::string("\x7f" "ELF\2\1\1", 7) + std::string(64, '\0'));
  full.set(SectionKind::ptx, ".version 8.4\n.target sm_90\n.address_size 64\n");
  full.set(SectionKind::log, "warning: something\n");
  full.set(SectionKind::lowered_names, "scale<float>\t_Z5scaleIfEvPT_\n");
  full.set(SectionKind::meta, "{\"arch\":\"sm_90\"}");
  Entry ptx_only;
  ptx_only.set(SectionKind::ptx, ".version 8.4\n");
  Entry twice;  // the same kind twice is legal on disk
  twice.sections = {{SectionKind::log, "a"}, {SectionKind::log, "b"}};
  for (const Entry* e : {&full, &ptx_only, &twice}) write(serialize(Key{}, *e));
  write(serialize(Key{}, Entry{}));
  const std::string good = serialize(Key{}, full);
  write(good.substr(0, good.size() / 2));
  std::string flipped = good;
  flipped[20] ^= 4;
  write(flipped);
  write("");
  write("KJIT");
  std::printf("%d seeds in %s\n", n, dir.string().c_str());
  return 0;
}
