# consumer/toolkit_elsewhere_programs (run by toolkit_elsewhere.sh, inside its mount namespace: the
# toolkit kjit was built with is hidden and reachable only at KJIT_CONSUMER_CUDA_ROOT): the
# programs that link libkjit and were built where the toolkit was (#52 item 5).
#  - KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH naming the toolkit there: the installed CLI (kjit's
#    `cmake --install`) prints the PTX of a random kernel and `kjit info` names that NVRTC; the
#    Python package of kjit's build compiles with it, and its kjit command (`python -m kjit`) too;
#  - none of them: the CLI exits 3 and the Python compile raises kjit.UnavailableError, each
#    naming the three variables (unless pip's CUDA packages hold an NVRTC for Python); CUDA_HOME
#    naming no folder: the message says so (#57 item 6).
#   cmake -DKJIT_CONSUMER_CUDA_ROOT=<toolkit> -DBUILD=<kjit build> -DPYTHON=<python3 or empty>
#         -DWORK=<dir> -P programs_elsewhere.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "installing kjit into ${WORK}/prefix failed")
endif()
string(RANDOM LENGTH 8 ALPHABET 0123456789 value)
file(WRITE ${WORK}/k.cu "__global__ void elsewhere(float* p) { p[threadIdx.x] = ${value}.25f; }\n")
set(clean --unset=KJIT_CUDA_HOME --unset=CUDA_HOME --unset=CUDA_PATH --unset=LD_LIBRARY_PATH PYTHONPATH=${BUILD}/python
    KJIT_CACHE_DIR=${WORK}/cache)
set(cli ${WORK}/prefix/bin/kjit)
function(expect_ok what rc out err pattern)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: exit ${rc}, expected /${pattern}/ on stdout:\n${out}\n${err}")
  endif()
endfunction()

foreach(variable KJIT_CUDA_HOME CUDA_HOME CUDA_PATH)
  set(env ${CMAKE_COMMAND} -E env ${clean} ${variable}=${KJIT_CONSUMER_CUDA_ROOT})
  execute_process(COMMAND ${env} ${cli} ptx k.cu --arch sm_90 WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect_ok("${variable}: kjit ptx (installed)" "${rc}" "${out}" "${err}" "\\.entry [^\n]*elsewhere")
  execute_process(COMMAND ${env} ${cli} info WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  expect_ok("${variable}: kjit info (installed)" "${rc}" "${out}" "${err}" "NVRTC [0-9.]+ \\(${KJIT_CONSUMER_CUDA_ROOT}/")
  if(PYTHON)
    execute_process(COMMAND ${env} ${PYTHON} -c
                      "import kjit; r = kjit.compile(kjit.Program('k.cu', open('k.cu').read()), arch='sm_90'); assert '.entry' in r.ptx; print(kjit.info()['nvrtc_library'])"
                    WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    expect_ok("${variable}: import kjit and compile" "${rc}" "${out}" "${err}" "^${KJIT_CONSUMER_CUDA_ROOT}/")
    execute_process(COMMAND ${env} ${PYTHON} -m kjit ptx k.cu --arch sm_90 WORKING_DIRECTORY ${WORK}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    expect_ok("${variable}: python -m kjit ptx" "${rc}" "${out}" "${err}" "\\.entry [^\n]*elsewhere")
  endif()
  message(STATUS "${variable}: the installed CLI and the Python package found NVRTC in ${KJIT_CONSUMER_CUDA_ROOT}")
endforeach()

# None of the variables: an error that names them, from the CLI (exit 3, stdout empty) and Python.
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${cli} ptx k.cu --arch sm_90 WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3 OR NOT out STREQUAL "" OR NOT err MATCHES "KJIT_CUDA_HOME" OR NOT err MATCHES "CUDA_HOME"
   OR NOT err MATCHES "CUDA_PATH" OR NOT err MATCHES "libnvrtc")
  message(FATAL_ERROR "no variable: kjit ptx exited ${rc} (expected 3), stdout \"${out}\", stderr:\n${err}")
endif()
# A variable set to no toolkit: the message names it and why, not "none is set" (#57 item 6).
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} CUDA_HOME=${WORK}/no-such-toolkit ${cli} ptx k.cu --arch sm_90
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3 OR NOT err MATCHES "CUDA_HOME=${WORK}/no-such-toolkit names no toolkit" OR err MATCHES "is set")
  message(FATAL_ERROR "CUDA_HOME naming nothing: kjit ptx exited ${rc} (expected 3), stderr:\n${err}")
endif()
if(PYTHON)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${PYTHON} -c
                    "import kjit\ntry:\n  kjit.compile(kjit.Program('k.cu', open('k.cu').read()), arch='sm_90')\nexcept kjit.UnavailableError as e:\n  print('refused:', e)\nelse:\n  print('compiled with', kjit.info()['nvrtc_library'])"
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(out MATCHES "^compiled with [^\n]*nvidia")
    message(STATUS "no variable: Python used pip's CUDA package: ${out}")
  elseif(NOT rc EQUAL 0 OR NOT out MATCHES "^refused:" OR NOT out MATCHES "KJIT_CUDA_HOME" OR NOT out MATCHES "CUDA_PATH")
    message(FATAL_ERROR "no variable: Python: exit ${rc}\n${out}\n${err}")
  endif()
endif()
file(REMOVE_RECURSE ${WORK})
