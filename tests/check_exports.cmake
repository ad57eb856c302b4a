# ctest script: libkjit.so exports the public API and nothing else. Every defined dynamic symbol
# (nm -D --defined-only, demangled) must be in namespace kjit but in none of the internal ones
# (the rooms of runtime/, cache/, detail), or be one of the C++ runtime's own (typeinfo, vtables
# and guard variables of public classes).
#   cmake -DNM=... -DLIBRARY=libkjit.so -P check_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only -C ${LIBRARY} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the exports of ${LIBRARY} with ${NM} failed (${rc}): ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(bad "")
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  # "<address> <type> <name>"
  string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${line}")
  math(EXPR count "${count} + 1")
  string(REGEX REPLACE "^(typeinfo for |typeinfo name for |vtable for |guard variable for )" "" subject "${name}")
  # A function template's specialization shows its return type first.
  string(REGEX REPLACE "^[^(]* (kjit::)" "\\1" subject "${subject}")
  if(NOT subject MATCHES "^kjit::")
    list(APPEND bad "${name}")
  elseif(subject MATCHES "kjit::(cache|base|trace|compile|link|driver|request|loader|tune|detail)::" AND
         NOT subject MATCHES "^kjit::(Module|KernelHandle)::")
    list(APPEND bad "${name}")
  endif()
endforeach()
if(bad)
  list(LENGTH bad n)
  list(JOIN bad "\n  " shown)
  message(FATAL_ERROR "${LIBRARY} exports ${n} internal symbol(s) besides the public API:\n  ${shown}")
endif()
message(STATUS "${LIBRARY}: all ${count} exported symbols are public API")
