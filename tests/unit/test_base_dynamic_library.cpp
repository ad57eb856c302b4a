// base::DynamicLibrary: the one loader of libcuda, nvJitLink and CUPTI (dlopen of the first
// candidate that opens, then a function table filled by name, missing names remembered).
#include "runtime/base/dynamic_library.hpp"

#include <doctest/doctest.h>

#include <string>

TEST_SUITE("DynamicLibrary") {
  TEST_CASE("the first candidate that opens is taken and a function table is filled by name") {
    auto lib = kjit::base::DynamicLibrary::open_first({"libkjit-no-such-library.so.7", "libm.so.6"});
    REQUIRE(static_cast<bool>(lib));
    CHECK(lib.file() == "libm.so.6");
    CHECK(lib.why().empty());
    double (*cosine)(double) = nullptr;
    lib.resolve(cosine, "cos");
    const bool found = cosine != nullptr;
    REQUIRE(found);
    CHECK(cosine(0.0) == 1.0);
    CHECK(lib.missing().empty());
    void (*absent)() = nullptr;
    void (*also_absent)() = nullptr;
    lib.resolve(absent, "kjit_no_such_symbol");
    lib.resolve(also_absent, "kjit_nor_this_one");
    const bool absent_is_null = absent == nullptr;
    CHECK(absent_is_null);
    CHECK(lib.missing() == "kjit_no_such_symbol, kjit_nor_this_one");
  }

  TEST_CASE("none opening says why the first failed and how many others were tried") {
    auto lib = kjit::base::DynamicLibrary::open_first({"libkjit-none-a.so.1", "libkjit-none-b.so.1", "/nowhere/c.so"});
    CHECK_FALSE(static_cast<bool>(lib));
    CHECK(lib.file().empty());
    CHECK(lib.why().find("libkjit-none-a.so.1: ") == 0);
    CHECK(lib.why().find("(and 2 other places)") != std::string::npos);
    void (*fn)() = reinterpret_cast<void (*)()>(1);
    lib.resolve(fn, "anything");
    const bool cleared = fn == nullptr;
    CHECK(cleared);
    CHECK(lib.missing() == "anything");
  }
}
