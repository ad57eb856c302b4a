// GPU tests of the source loader (label gpu): a typed kernel loaded by file name with a
// manifest variant, and hot reload: launch, edit a header the kernel includes, launch again
// and see the new result; with hot reload off the loaded module stays.
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"

#include <kjit/loader.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

namespace {

const char* k_fill = "#include \"value.cuh\"\n"
                     "extern \"C\" __global__ void fill(int* out, int n) {\n"
                     "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) out[i] = VALUE * BLOCK + i;\n"
                     "}\n";

int first_value(kjit::KernelLoader& loader, std::string_view variant) {
  auto fill = loader.kernel<void(int*, int)>("fill.cu", "fill", variant);
  kjit::DeviceBuffer<int> out(64);
  out.fill_bytes(0xFF);
  fill({.grid = {1}, .block = {64}}, out.data(), 64);
  auto host = out.to_host();
  return host[0];
}

}  // namespace

TEST_SUITE("KernelLoader") {
  TEST_CASE("loader: a manifest variant launches and hot reload launches the edited kernel after a header edit") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k/fill.cu", k_fill);
    kjit::test::write_file(dir / "k/value.cuh", "#define VALUE 1\n");
    kjit::test::write_file(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [{"file": "fill.cu",
      "variants": [{"name": "b2", "defines": ["BLOCK=2"]}, {"name": "b3", "defines": ["BLOCK=3"]}]}]})");
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader hot({.folders = {dir / "k"}, .use_environment = false, .use_installed = false,
                            .hot_reload = true}, rt);
    kjit::KernelLoader cold({.folders = {dir / "k"}, .use_environment = false, .use_installed = false}, rt);
    CHECK(first_value(hot, "") == 2);     // the first variant: VALUE 1 * BLOCK 2
    CHECK(first_value(hot, "b3") == 3);
    CHECK(first_value(cold, "b3") == 3);

    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    kjit::test::write_file(dir / "k/value.cuh", "#define VALUE 10\n");
    CHECK(first_value(hot, "b3") == 30);   // recompiled from the new text
    CHECK(first_value(cold, "b3") == 3);   // off: the loaded module stays
    // Hot reload again, on the kernel file itself.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::string edited = k_fill;
    edited.replace(edited.find("+ i;"), 4, "+ 2 * i + 5;");
    kjit::test::write_file(dir / "k/fill.cu", edited);
    CHECK(first_value(hot, "b2") == 25);
    CHECK(hot.load("fill.cu", "b2").compile_result().program_name == "fill.cu");
  }

  TEST_CASE("loader: hot reload launches from a new file that shadows the header or kernel file it read") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    std::filesystem::create_directories(dir / "first");  // searched before k/, empty for now
    kjit::test::write_file(dir / "k/fill.cu", k_fill);
    kjit::test::write_file(dir / "second/value.cuh", "#define VALUE 1\n#define BLOCK 4\n");
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::KernelLoader hot({.folders = {dir / "first", dir / "k", dir / "second"}, .use_environment = false,
                            .use_installed = false, .hot_reload = true}, rt);
    CHECK(first_value(hot, "") == 4);
    // A value.cuh next to fill.cu comes before the one in second/ (quoted includes look there first).
    kjit::test::write_file(dir / "k/value.cuh", "#define VALUE 2\n#define BLOCK 4\n");
    CHECK(first_value(hot, "") == 8);
    // A fill.cu in first/ comes before k/fill.cu; its "value.cuh" is k/'s (first/ has none, and
    // the search path comes next: first/, k/, second/).
    std::string shadow = k_fill;
    shadow.replace(shadow.find("+ i;"), 4, "+ 100 + i;");
    kjit::test::write_file(dir / "first/fill.cu", shadow);
    CHECK(first_value(hot, "") == 2 * 4 + 100);
    CHECK(hot.load("fill.cu").compile_result().program_name == "fill.cu");
  }
}
