include_guard(GLOBAL)
# kjit_warnings(target): the warning set every kjit target builds with (KJIT_WARNING_FLAGS).
# -Wno-subobject-linkage: GCC warns of a class whose field's type is in an anonymous namespace
# unless the class is in the main file, since in a header it could be defined twice. A unity
# build (kjit's default) includes each .cpp into one file, so every such class of a .cpp
# (a pimpl's Impl holding a local handle type) would be reported, though each is still defined once.
set(KJIT_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND KJIT_WARNING_FLAGS -Wno-subobject-linkage)
endif()
function(kjit_warnings target)
  target_compile_options(${target} PRIVATE ${KJIT_WARNING_FLAGS})
endfunction()
