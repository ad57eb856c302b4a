# ctest script: one storage floor in a process. The floors (core/system/, core/cache/) hold
# process-wide state (fork handlers, the worker list, libsodium's initialisation, hiredis and
# libcurl), so they are linked into libkjit.so alone and libkjit_tools.so calls them through
# libkjit's exports (KJIT_TOOLS_API). This fails on libkjit_tools.so defining
#   - a function the floors' sources define (a copy of it: a second registry, a second list),
#   - any data of the floors' namespaces (a static, a guard variable, a vtable or typeinfo),
#   - a symbol of libsodium, hiredis or libcurl.
# An inline function of a floor header (an implicit destructor) may be compiled into it, as any
# header's inline function is: it holds no state of its own. Symbols are compared mangled.
#   cmake -DNM=... -DTOOLS=libkjit_tools.so "-DFLOORS=libkjit_system.a;libkjit_cache.a" -P check_tools_floor.cmake
cmake_minimum_required(VERSION 3.25)

# "TYPE NAME" lines of `nm` on ${ARGN}, defined symbols only (no archive member headers).
function(kjit_nm_defined out)
  execute_process(COMMAND ${NM} --defined-only ${ARGN} OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "listing the symbols of ${ARGN} with ${NM} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "[0-9a-fA-F]+ [A-Za-z] [^\n]+" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# A mangled name of the floors' namespaces: kjit::system:: or kjit::cache::, also a static inside
# one of their functions (_ZZN...), its guard variable (_ZGV), typeinfo, its name and the vtable.
set(floor_name "^_Z(GV|T[ISVT])?Z?NK?4kjit(5cache|6system)")

# What the floors' sources define themselves (code and data, global or file-local), by name
# without the compiler's clone suffixes (.cold, .part.0, .isra.0, .constprop.0).
kjit_nm_defined(floor_lines ${FLOORS})
set(floor_defined ";")
foreach(line IN LISTS floor_lines)
  if(line MATCHES "^[0-9a-fA-F]+ ([TtDdBbRr]) ([^. ]+)")
    string(APPEND floor_defined "${CMAKE_MATCH_2};")
  endif()
endforeach()

kjit_nm_defined(tools_lines ${TOOLS})
set(problems "")
set(checked 0)
foreach(line IN LISTS tools_lines)
  if(NOT line MATCHES "^[0-9a-fA-F]+ ([A-Za-z]) ([^ ]+)")
    continue()
  endif()
  set(type ${CMAKE_MATCH_1})
  set(name ${CMAKE_MATCH_2})
  if(name MATCHES "^(sodium_|crypto_|redis|curl_)")
    list(APPEND problems "${name}: libsodium's, hiredis' or libcurl's (only libkjit links them)")
    continue()
  endif()
  if(NOT name MATCHES "${floor_name}")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  string(REGEX REPLACE "\\..*$" "" plain "${name}")
  if(NOT type MATCHES "^[TtWwi]$")
    list(APPEND problems "${name} (${type}): data of the floors, a second copy of their state")
  else()
    string(FIND "${floor_defined}" ";${plain};" at)
    if(NOT at EQUAL -1)
      list(APPEND problems "${name}: a function of the floors' sources, a second copy of it")
    endif()
  endif()
endforeach()

message(STATUS "${TOOLS}: ${checked} symbol(s) of kjit::system or kjit::cache defined, "
               "each an inline function of their headers")
if(problems)
  list(LENGTH problems n)
  list(JOIN problems "\n  " shown)
  message(FATAL_ERROR "${TOOLS} holds ${n} symbol(s) of the floors, which libkjit.so alone may define "
                      "(link core/system and core/cache into libkjit only; mark what libkjit_tools calls "
                      "KJIT_TOOLS_API):\n  ${shown}")
endif()
