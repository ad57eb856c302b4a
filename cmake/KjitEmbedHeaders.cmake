# kjit_embed_headers(DIR OUT): writes OUT, a C++ source that defines
# kjit::compile::standard_header_files(), the files under DIR (kjit's standard headers for NVRTC)
# as (name relative to DIR, content) pairs, sorted by name. Run at build time (cmake -P) by the
# custom command in core/CMakeLists.txt, so that editing a header rebuilds the table.
if(CMAKE_SCRIPT_MODE_FILE)
  file(GLOB_RECURSE files RELATIVE "${DIR}" "${DIR}/*")
  list(SORT files)
  set(body "")
  foreach(name IN LISTS files)
    file(READ "${DIR}/${name}" content)
    string(FIND "${content}" ")kjit_h\"" clash)
    if(NOT clash EQUAL -1)
      message(FATAL_ERROR "${DIR}/${name} contains the raw-string delimiter )kjit_h\"")
    endif()
    string(APPEND body "    {\"${name}\", R\"kjit_h(${content})kjit_h\"},\n")
  endforeach()
  file(WRITE "${OUT}.tmp" "// Generated from core/compile/headers/include/ by cmake/KjitEmbedHeaders.cmake: do not edit.\n"
"#include \"core/compile/headers/standard_headers.hpp\"\n\nnamespace kjit::compile {\n\n"
"const std::vector<std::pair<std::string_view, std::string_view>>& standard_header_files() {\n"
"  static const std::vector<std::pair<std::string_view, std::string_view>> files = {\n${body}  };\n"
"  return files;\n}\n\n}  // namespace kjit::compile\n")
  file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUT}.tmp")
  return()
endif()

function(kjit_embed_headers target dir out)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*")
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
    DEPENDS ${files} ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
    COMMENT "Embedding kjit's standard headers for NVRTC"
    VERBATIM)
  target_sources(${target} PRIVATE "${out}")
endfunction()
