include_guard(GLOBAL)
# kjit_warnings(target): the warning set every kjit target builds with.
function(kjit_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wno-missing-field-initializers)
endfunction()
