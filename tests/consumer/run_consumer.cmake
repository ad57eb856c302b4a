# Installs kjit into a temporary prefix and builds a project against it with find_package(kjit),
# then runs its program and matches its output.
#   KJIT_BINARY_DIR       kjit's build folder (installed from)
#   KJIT_CONSUMER_SOURCE  the project (it sets no C++ standard: kjit::kjit carries C++20)
#   KJIT_CONSUMER_WORK    a scratch folder (prefix/ and build/)
#   KJIT_CONSUMER_PROGRAM the program, relative to the project's build folder
#   KJIT_CONSUMER_EXPECT  a regular expression its output must match
#   KJIT_CONSUMER_CUDA_ROOT  optional: the consumer's CUDAToolkit_ROOT (a toolkit elsewhere)
file(REMOVE_RECURSE ${KJIT_CONSUMER_WORK})
set(prefix ${KJIT_CONSUMER_WORK}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${KJIT_BINARY_DIR} --prefix ${prefix} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "installing kjit into ${prefix} failed")
endif()

# The exported target carries C++20 and names the include folder once.
file(GLOB_RECURSE targets_file ${prefix}/*/kjitTargets.cmake)
if(NOT targets_file)
  message(FATAL_ERROR "no kjitTargets.cmake under ${prefix}")
endif()
file(READ ${targets_file} targets)
string(REGEX MATCH "INTERFACE_COMPILE_FEATURES \"[^\"]*\"" features "${targets}")
if(NOT features MATCHES "cxx_std_20")
  message(FATAL_ERROR "kjit::kjit does not carry cxx_std_20 (${features}) in ${targets_file}")
endif()
string(REGEX MATCH "INTERFACE_INCLUDE_DIRECTORIES \"[^\"]*\"" includes "${targets}")
string(REGEX MATCHALL "\\\$\\{_IMPORT_PREFIX\\}/include" include_dirs "${includes}")
list(LENGTH include_dirs include_count)
if(NOT include_count EQUAL 1)
  message(FATAL_ERROR "kjit::kjit lists its include folder ${include_count} times: ${includes}")
endif()

set(cuda_root "")
if(KJIT_CONSUMER_CUDA_ROOT)
  set(cuda_root -DCUDAToolkit_ROOT=${KJIT_CONSUMER_CUDA_ROOT})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${KJIT_CONSUMER_SOURCE} -B ${KJIT_CONSUMER_WORK}/build -G ${KJIT_GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix} ${cuda_root} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring ${KJIT_CONSUMER_SOURCE} with find_package(kjit) failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${KJIT_CONSUMER_WORK}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building ${KJIT_CONSUMER_SOURCE} against the installed kjit failed")
endif()
set(ENV{KJIT_CACHE_DIR} ${KJIT_CONSUMER_WORK}/cache)  # not the user's cache
execute_process(COMMAND ${KJIT_CONSUMER_WORK}/build/${KJIT_CONSUMER_PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(rc OR NOT out MATCHES "${KJIT_CONSUMER_EXPECT}")
  message(FATAL_ERROR "${KJIT_CONSUMER_PROGRAM} did not run as expected (rc ${rc}): ${out}${err}")
endif()
