# Installs kjit into a temporary prefix and builds a project against it with find_package(kjit),
# then runs its program and matches its output.
#   KJIT_BINARY_DIR       kjit's build folder (installed from)
#   KJIT_CONSUMER_SOURCE  the project (it sets no C++ standard: kjit::kjit carries C++20)
#   KJIT_CONSUMER_WORK    a scratch folder (prefix/ and build/)
#   KJIT_CONSUMER_PROGRAM the program, relative to the project's build folder
#   KJIT_CONSUMER_EXPECT  a regular expression its output must match
#   KJIT_CONSUMER_CUDA_ROOT  optional: the toolkit, elsewhere than kjit's build saw it (hidden there by
#                         toolkit_elsewhere.sh): the program runs with KJIT_CUDA_HOME naming it, and
#                         without, where it must start and say which variable names the toolkit
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

# The consumer needs nothing of the CUDA toolkit to build (kjitConfig.cmake finds none): with
# KJIT_CONSUMER_CUDA_ROOT (toolkit_elsewhere.sh) the toolkit is hidden while it configures and builds.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${KJIT_CONSUMER_SOURCE} -B ${KJIT_CONSUMER_WORK}/build -G ${KJIT_GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring ${KJIT_CONSUMER_SOURCE} with find_package(kjit) failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${KJIT_CONSUMER_WORK}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building ${KJIT_CONSUMER_SOURCE} against the installed kjit failed")
endif()
set(program ${KJIT_CONSUMER_WORK}/build/${KJIT_CONSUMER_PROGRAM})
# The program records no libnvrtc and no toolkit folder (#57 item 2): libkjit opens NVRTC itself.
find_program(readelf readelf)
if(readelf)
  execute_process(COMMAND ${readelf} -d ${program} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
  if(rc OR dynamic MATCHES "NEEDED[^\n]*libnvrtc" OR dynamic MATCHES "R(UN)?PATH[^\n]*/cuda")
    message(FATAL_ERROR "${program} records NVRTC or a toolkit folder (readelf -d):\n${dynamic}")
  endif()
endif()
set(ENV{KJIT_CACHE_DIR} ${KJIT_CONSUMER_WORK}/cache)  # not the user's cache
set(clean --unset=KJIT_CUDA_HOME --unset=CUDA_HOME --unset=CUDA_PATH --unset=LD_LIBRARY_PATH)
set(named "")
if(KJIT_CONSUMER_CUDA_ROOT)
  set(named KJIT_CUDA_HOME=${KJIT_CONSUMER_CUDA_ROOT})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${named} ${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(rc OR NOT out MATCHES "${KJIT_CONSUMER_EXPECT}")
  message(FATAL_ERROR "${KJIT_CONSUMER_PROGRAM} did not run as expected (rc ${rc}): ${out}${err}")
endif()
if(KJIT_CONSUMER_CUDA_ROOT)
  # The toolkit moved and named by nothing: the program starts (the loader needs no NVRTC) and its
  # compile fails with libkjit's UnavailableError naming the variables.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(rc EQUAL 0 OR rc EQUAL 127 OR err MATCHES "error while loading shared libraries" OR NOT err MATCHES "KJIT_CUDA_HOME")
    message(FATAL_ERROR "${KJIT_CONSUMER_PROGRAM} with the toolkit named by nothing: exit ${rc}, expected kjit's "
                        "UnavailableError naming KJIT_CUDA_HOME:\n${out}${err}")
  endif()
  message(STATUS "named by nothing: ${err}")
endif()
