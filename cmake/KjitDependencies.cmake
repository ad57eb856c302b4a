# Every third-party dependency is found here, once, and wrapped as one target:
#   kjit::dep::cuda   CUDA headers (cuda.h, nvrtc.h); links neither libcuda nor NVRTC (both opened at run time)
#   kjit::dep::fmt    fmt, its compiled part built once here (cmake/deps/fmt.cpp), static so that binaries carry it
#   kjit::dep::xxhash xxHash, inlined (XXH_INLINE_ALL) so that binaries carry it
#   kjit::dep::cli11  CLI11 (header-only)
#   kjit::dep::json   nlohmann-json (header-only)
#   kjit::dep::dtl    dtl diff library (header-only)
#   kjit::dep::hiredis  hiredis (Redis client), static
#   kjit::dep::sodium   libsodium (HMAC-SHA256), static
#   kjit::dep::curl     libcurl (the remote tier's HTTP store), shared; empty when KJIT_HTTP_STORE is off
#   doctest::doctest  (tests only)
include(GNUInstallDirs)
include_guard(GLOBAL)

find_package(CUDAToolkit 12.4 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)

add_library(kjit_dep_cuda INTERFACE)
add_library(kjit::dep::cuda ALIAS kjit_dep_cuda)
# The headers only: NVRTC, like libcuda, is opened at run time (core/base/nvrtc_library.cpp), so
# nothing kjit builds records libnvrtc and a program starts wherever the toolkit is (#52 item 5).
# Never CUDA::nvrtc: it lists CUDA::cuda_driver, the link stub, which a linker that keeps every
# library it is given would record in every test, tool and benchmark.
target_link_libraries(kjit_dep_cuda INTERFACE ${CMAKE_DL_LIBS})
target_include_directories(kjit_dep_cuda SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})

# fmt as its own static library, compiled once: with fmt's header-only mode every file that
# formats compiled fmt's core again (a quarter of a small file's build). Hidden and position
# independent, linked into each binary, so that no binary needs the system's libfmt.
add_library(kjit_dep_fmt STATIC ${CMAKE_CURRENT_LIST_DIR}/deps/fmt.cpp)
add_library(kjit::dep::fmt ALIAS kjit_dep_fmt)
target_include_directories(kjit_dep_fmt SYSTEM PUBLIC
  $<BUILD_INTERFACE:$<TARGET_PROPERTY:fmt::fmt-header-only,INTERFACE_INCLUDE_DIRECTORIES>>)
set_target_properties(kjit_dep_fmt PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
                                              VISIBILITY_INLINES_HIDDEN ON UNITY_BUILD OFF)

find_path(KJIT_XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
add_library(kjit_dep_xxhash INTERFACE)
add_library(kjit::dep::xxhash ALIAS kjit_dep_xxhash)
target_include_directories(kjit_dep_xxhash SYSTEM INTERFACE ${KJIT_XXHASH_INCLUDE_DIR})
target_compile_definitions(kjit_dep_xxhash INTERFACE XXH_INLINE_ALL)

find_package(CLI11 CONFIG QUIET)
if(TARGET CLI11::CLI11)
  add_library(kjit_dep_cli11 INTERFACE)
  target_link_libraries(kjit_dep_cli11 INTERFACE CLI11::CLI11)
else()
  find_path(KJIT_CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(kjit_dep_cli11 INTERFACE)
  target_include_directories(kjit_dep_cli11 SYSTEM INTERFACE ${KJIT_CLI11_INCLUDE_DIR})
endif()
add_library(kjit::dep::cli11 ALIAS kjit_dep_cli11)

find_package(nlohmann_json 3.10 REQUIRED)
add_library(kjit_dep_json INTERFACE)
add_library(kjit::dep::json ALIAS kjit_dep_json)
target_link_libraries(kjit_dep_json INTERFACE nlohmann_json::nlohmann_json)

find_path(KJIT_DTL_INCLUDE_DIR dtl/dtl.hpp REQUIRED)
add_library(kjit_dep_dtl INTERFACE)
add_library(kjit::dep::dtl ALIAS kjit_dep_dtl)
target_include_directories(kjit_dep_dtl SYSTEM INTERFACE ${KJIT_DTL_INCLUDE_DIR})

if(KJIT_BUILD_TESTS)
  find_package(doctest REQUIRED)
  include(doctest)
endif()

# The remote cache tier: hiredis (Redis) and libsodium (HMAC-SHA256 of remote values), linked
# statically into kjit_cache so that libkjit and the CLI carry them (the GPU machines have
# neither; libkjit.map.in keeps their symbols private).
find_path(KJIT_HIREDIS_INCLUDE_DIR hiredis/hiredis.h REQUIRED)
find_library(KJIT_HIREDIS_LIBRARY NAMES libhiredis.a hiredis REQUIRED)
add_library(kjit_dep_hiredis INTERFACE)
add_library(kjit::dep::hiredis ALIAS kjit_dep_hiredis)
target_include_directories(kjit_dep_hiredis SYSTEM INTERFACE ${KJIT_HIREDIS_INCLUDE_DIR})
target_link_libraries(kjit_dep_hiredis INTERFACE ${KJIT_HIREDIS_LIBRARY})

find_path(KJIT_SODIUM_INCLUDE_DIR sodium.h REQUIRED)
find_library(KJIT_SODIUM_LIBRARY NAMES libsodium.a sodium REQUIRED)
add_library(kjit_dep_sodium INTERFACE)
add_library(kjit::dep::sodium ALIAS kjit_dep_sodium)
target_include_directories(kjit_dep_sodium SYSTEM INTERFACE ${KJIT_SODIUM_INCLUDE_DIR})
target_link_libraries(kjit_dep_sodium INTERFACE ${KJIT_SODIUM_LIBRARY})

# The remote tier's HTTP store (core/cache/remote/http_store.cpp): libcurl, the system's shared one (its
# TLS library and CA store go with it; Debian's and Ubuntu's libcurl4-openssl-dev). KJIT_HTTP_STORE:
# AUTO (default: built when libcurl is found), ON (required) or OFF. Without it an http:// or
# https:// entry of KJIT_REMOTE_CACHE is refused, saying so (core/cache/remote/remote_store.cpp).
set(KJIT_HTTP_STORE AUTO CACHE STRING "The remote tier's HTTP store through libcurl: AUTO, ON or OFF")
set_property(CACHE KJIT_HTTP_STORE PROPERTY STRINGS AUTO ON OFF)
add_library(kjit_dep_curl INTERFACE)
add_library(kjit::dep::curl ALIAS kjit_dep_curl)
set(KJIT_HAS_HTTP_STORE OFF)
if(KJIT_HTTP_STORE STREQUAL "ON")
  find_package(CURL REQUIRED)
elseif(NOT KJIT_HTTP_STORE STREQUAL "OFF")
  find_package(CURL QUIET)
endif()
if(NOT KJIT_HTTP_STORE STREQUAL "OFF" AND CURL_FOUND)
  set(KJIT_HAS_HTTP_STORE ON)
  target_link_libraries(kjit_dep_curl INTERFACE CURL::libcurl)
  target_compile_definitions(kjit_dep_curl INTERFACE KJIT_HAS_HTTP_STORE=1)
endif()
message(STATUS "kjit: the remote tier's HTTP store (libcurl): ${KJIT_HAS_HTTP_STORE}")
