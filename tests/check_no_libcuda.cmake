# ctest script: no binary kjit builds may record libcuda.so.1 as a needed library (the driver is
# opened at run time, so that compiling, caching and the CPU tests work without one). Reads each
# file's dynamic section with readelf: the test would not catch it by running, because a linker
# that drops unused libraries (Debian's default) can hide the dependency that others keep.
#   cmake -DREADELF=... -DFILES="a;b;c" -P check_no_libcuda.cmake
set(bad "")
foreach(f IN LISTS FILES)
  execute_process(COMMAND ${READELF} -d ${f} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "reading the dynamic section of ${f} with ${READELF} failed (${rc}): ${err}")
  endif()
  if(out MATCHES "\\(NEEDED\\)[^\n]*libcuda\\.so")
    list(APPEND bad ${f})
  endif()
endforeach()
list(LENGTH FILES n)
if(bad)
  list(JOIN bad "\n  " shown)
  message(FATAL_ERROR "these binaries record libcuda.so as a needed library, so they cannot start without a "
                      "CUDA driver:\n  ${shown}")
endif()
message(STATUS "none of ${n} binaries records libcuda.so")
