# ctest script: libkjit.so exports the public API and the internals libkjit_tools uses, nothing
# else; libkjit_tools.so exports its public API alone. Every defined dynamic symbol (nm -D
# --defined-only, demangled) must be in namespace kjit (or be one of the C++ runtime's own:
# typeinfo, vtables and guard variables of public classes); one in an internal namespace (a room's:
# system, cache, base, trace, compile, link, driver, request, loader, tune, profile, or
# detail) passes only in libkjit and only when libkjit_tools takes it from there (nm -D -u). Run-time
# type information (typeinfo, its name, the vtable) only of a public class of namespace kjit, by
# its plain name: never of a lambda, a function type or a class inside a function (core/libkjit.map
# lists the public polymorphic types).
#   cmake -DNM=... -DLIBRARY=libkjit.so -DTOOLS=libkjit_tools.so -P check_exports.cmake
cmake_minimum_required(VERSION 3.25)  # policies: a quoted "LIBRARY" is a string, not the variable

function(kjit_nm out library)
  execute_process(COMMAND ${NM} -D -C ${ARGN} ${library} OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "listing the dynamic symbols of ${library} with ${NM} failed (${rc}): ${err}")
  endif()
  string(REPLACE ";" "\\;" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    if(NOT line STREQUAL "")
      string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${line}")
      list(APPEND names "${name}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

set(internal "kjit::(system|cache|base|trace|compile|link|driver|request|loader|tune|profile|measure|detail)::")
kjit_nm(tools_uses ${TOOLS} -u)
set(problems "")
foreach(which IN ITEMS LIBRARY TOOLS)
  kjit_nm(exports ${${which}} --defined-only)
  set(count 0)
  set(functions 0)
  set(for_tools 0)
  foreach(name IN LISTS exports)
    math(EXPR count "${count} + 1")
    if(name MATCHES "^(typeinfo for |typeinfo name for |vtable for )(.*)$"
       AND NOT CMAKE_MATCH_2 MATCHES "^kjit::[A-Za-z_][A-Za-z0-9_]*$")
      list(APPEND problems "${${which}}: ${name} (the type information of a type that is no public class)")
    endif()
    string(REGEX REPLACE "^(typeinfo for |typeinfo name for |vtable for |guard variable for )" "" subject "${name}")
    # A function template's specialization shows its return type first.
    string(REGEX REPLACE "^[^(]* (kjit::)" "\\1" subject "${subject}")
    if(subject MATCHES "\\(")
      math(EXPR functions "${functions} + 1")
    endif()
    if(NOT subject MATCHES "^kjit::")
      list(APPEND problems "${${which}}: ${name} (not kjit's)")
    elseif(subject MATCHES "${internal}" AND NOT subject MATCHES "^kjit::(Module|KernelHandle)::")
      list(FIND tools_uses "${name}" used)
      if(which STREQUAL "LIBRARY" AND NOT used EQUAL -1)
        math(EXPR for_tools "${for_tools} + 1")
      else()
        list(APPEND problems "${${which}}: ${name} (internal, and no client takes it)")
      endif()
    endif()
  endforeach()
  message(STATUS "${${which}}: ${count} exported symbols, ${functions} of them functions; "
                 "${for_tools} internal ones for libkjit_tools")
endforeach()
if(problems)
  list(LENGTH problems n)
  list(JOIN problems "\n  " shown)
  message(FATAL_ERROR "${n} exported symbol(s) that no client should see:\n  ${shown}")
endif()
