// base::read_source_file, read_text_file and check_no_nul: sources read through the one reader
// (system::read_file, tests/unit/test_cache_file_io.cpp) under KJIT_MAX_SOURCE_SIZE, and NUL bytes
// refused wherever a text would reach NVRTC (a file, a header, an in-memory source or header).
#include <kjit/tools.hpp>

#include "core/base/source_file.hpp"
#include "support/helpers.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <sys/stat.h>
#include <random>
#include <string>

namespace {

const std::string k_kernel = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";

// "...prefix<NUL>suffix": the prefix alone is a valid program, so a silent truncation would compile.
std::string with_nul(std::size_t* offset) {
  std::string s = k_kernel;
  *offset = s.size();
  s.push_back('\0');
  s += "this is not CUDA and would fail to compile\n";
  return s;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const kjit::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError");
  return {};
}

}  // namespace

TEST_SUITE("SourceFile") {
  TEST_CASE("read_source_file reads every byte and refuses a file over KJIT_MAX_SOURCE_SIZE naming it") {
    kjit::test::TempDir dir;
    std::mt19937 gen(7);
    std::string bytes(100'003, '\0');
    for (auto& c : bytes) c = static_cast<char>(gen());
    kjit::test::write_file(dir / "blob", bytes);
    auto f = kjit::base::read_source_file(dir / "blob");
    REQUIRE(f.ok());
    CHECK(f.bytes == bytes);
    kjit::test::ScopedEnv cap("KJIT_MAX_SOURCE_SIZE", "4k");
    auto big = kjit::base::read_source_file(dir / "blob");
    CHECK(big.error == EFBIG);
    CHECK(big.bytes.empty());
    CHECK(big.why().find("larger than 4096 bytes (KJIT_MAX_SOURCE_SIZE)") != std::string::npos);
    CHECK(big.message().find((dir / "blob").string()) != std::string::npos);
  }

  TEST_CASE("read_text_file names the file and why and refuses a NUL byte with its offset") {
    kjit::test::TempDir dir;
    try {
      kjit::base::read_text_file(dir / "missing.cu", "CUDA source");
      FAIL("expected an IoError");
    } catch (const kjit::IoError& e) {
      CHECK(std::string(e.what()).find("reading CUDA source " + (dir / "missing.cu").string()) != std::string::npos);
      CHECK(std::string(e.what()).find("No such file") != std::string::npos);
    }
    std::size_t offset = 0;
    kjit::test::write_file(dir / "nul.cu", with_nul(&offset));
    std::string what = error_of([&] { kjit::read_program(dir / "nul.cu"); });
    CHECK(what.find((dir / "nul.cu").string()) != std::string::npos);
    CHECK(what.find("NUL byte at offset " + std::to_string(offset)) != std::string::npos);
  }

  TEST_CASE("an in-memory source or header with a NUL byte is refused and never compiled") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    std::size_t offset = 0;
    std::string what = error_of([&] { rt.compile(kjit::Program("inline.cu", with_nul(&offset)), {.arch = kjit::Arch::sm(90)}); });
    CHECK(what.find("program inline.cu") != std::string::npos);
    CHECK(what.find("offset " + std::to_string(offset)) != std::string::npos);
    what = error_of([&] {
      rt.compile(kjit::Program("h.cu", "#include \"h.cuh\"\n" + k_kernel).header("h.cuh", "// x\n" + std::string(1, '\0')),
                 {.arch = kjit::Arch::sm(90)});
    });
    CHECK(what.find("h.cuh of program h.cu") != std::string::npos);
    CHECK(what.find("offset 5") != std::string::npos);
    CHECK(rt.stats().compiles == 0);
  }

  TEST_CASE("a header file with a NUL byte reached through include is refused with its path") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "bad.cuh", std::string("#define X 1\n") + '\0' + "garbage");
    kjit::test::write_file(dir / "a.cu", "#include \"bad.cuh\"\n" + k_kernel);
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    std::string what = error_of([&] { rt.compile(kjit::read_program(dir / "a.cu"), {.arch = kjit::Arch::sm(90)}); });
    CHECK(what.find("header " + std::filesystem::weakly_canonical(dir / "bad.cuh").string()) != std::string::npos);
    CHECK(what.find("offset 12") != std::string::npos);
  }

  TEST_CASE("kjit compile of a file with a NUL byte fails with exit code 1 and says where") {
    kjit::test::TempDir dir;
    std::size_t offset = 0;
    kjit::test::write_file(dir / "nul.cu", with_nul(&offset));
    auto r = kjit::test::run_command(std::string(KJIT_BINARY_DIR) + "/cli/kjit --cache-dir " + (dir / "c").string() +
                                     " compile --arch sm_90 " + (dir / "nul.cu").string() + " 2>&1");
    CHECK(r.code == 1);  // an input that cannot be used, as a missing one
    CHECK(r.out.find("NUL byte at offset " + std::to_string(offset)) != std::string::npos);
  }

  TEST_CASE("KJIT_MAX_SOURCE_SIZE caps sources and headers with an IoError and a bad value is a UsageError") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "big.cu", "// " + std::string(3000, 'x') + "\n" + k_kernel);
    kjit::test::write_file(dir / "big.cuh", "// " + std::string(3000, 'x') + "\n");
    kjit::test::write_file(dir / "uses.cu", "#include \"big.cuh\"\n" + k_kernel);
    CHECK(kjit::base::max_source_size() == kjit::base::k_default_max_source_size);
    ::setenv("KJIT_MAX_SOURCE_SIZE", "2k", 1);
    CHECK(kjit::base::max_source_size() == 2048);
    CHECK_THROWS_WITH_AS(kjit::read_program(dir / "big.cu"), doctest::Contains("larger than 2048 bytes"), kjit::IoError);
    CHECK_THROWS_AS(kjit::read_program("/dev/zero"), kjit::IoError);
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
      kjit::Program p = kjit::read_program(dir / "uses.cu");
      CHECK_THROWS_WITH_AS(rt.compile(p, {.arch = kjit::Arch::sm(90)}), doctest::Contains("big.cuh"), kjit::IoError);
    }
    ::setenv("KJIT_MAX_SOURCE_SIZE", "plenty", 1);
    CHECK_THROWS_WITH_AS(kjit::read_program(dir / "big.cu"), doctest::Contains("KJIT_MAX_SOURCE_SIZE=\"plenty\""),
                         kjit::UsageError);
    ::unsetenv("KJIT_MAX_SOURCE_SIZE");
    CHECK_NOTHROW(kjit::read_program(dir / "big.cu"));
  }
}
