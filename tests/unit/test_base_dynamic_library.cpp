// base::DynamicLibrary: the one loader of libcuda, nvJitLink and CUPTI (dlopen of the first
// candidate that opens, then a function table filled by name, missing names remembered).
#include "core/base/dynamic_library.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

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

  // #40 item 17: dlerror() names the file already; "libcuda.so.1: libcuda.so.1: cannot open ..." named it twice.
  TEST_CASE("a library that does not open is named once in why") {
    const std::string name = "libkjit-no-such-library-" + std::to_string(::getpid()) + ".so.1";
    auto lib = kjit::base::DynamicLibrary::open_first({name});
    CHECK_FALSE(static_cast<bool>(lib));
    CHECK_MESSAGE(lib.why().find(name + ": ") == 0, lib.why());
    CHECK_MESSAGE(lib.why().find(name, 1) == std::string::npos, lib.why());
    CHECK(lib.why().find("cannot open shared object file") != std::string::npos);
  }
}
