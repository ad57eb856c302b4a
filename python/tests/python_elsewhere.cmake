# python/install_user_site, step 3 (run by tests/consumer/toolkit_elsewhere.sh inside its mount
# namespace: the toolkit kjit was built with is hidden where it was, also from ldconfig's cache,
# and reachable only at KJIT_CONSUMER_CUDA_ROOT): the Python package installed by the README's line
# (the user site) and docs/python.md's venv line start and compile there (#57 item 1):
#  - KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH naming it, or LD_LIBRARY_PATH holding its lib/: `import
#    kjit` compiles with that NVRTC, `python -m kjit ptx` and the venv's `kjit ptx` print the PTX;
#  - none of them: `import kjit` still works, and the compile raises kjit.UnavailableError naming
#    the three variables (unless pip's CUDA packages hold an NVRTC).
#   cmake -DKJIT_CONSUMER_CUDA_ROOT=<toolkit> -DPYTHON=<python3> -DFINDER=<env for the user site>
#         -DVENV=<venv or empty> -DHOME=<scratch home> -DWORK=<dir> -P python_elsewhere.cmake
string(RANDOM LENGTH 8 ALPHABET 0123456789 value)
file(WRITE ${WORK}/k.cu "__global__ void moved(float* p) { p[threadIdx.x] = ${value}.5f; }\n")
set(clean --unset=KJIT_CUDA_HOME --unset=CUDA_HOME --unset=CUDA_PATH --unset=LD_LIBRARY_PATH --unset=PYTHONPATH
    HOME=${HOME} KJIT_CACHE_DIR=${WORK}/cache-elsewhere)
set(compile "import kjit; r = kjit.compile(kjit.Program('k.cu', open('k.cu').read()), arch='sm_90'); assert 'moved' in r.ptx; print(kjit.info()['nvrtc_library'])")
function(expect_ok what rc out err pattern)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: exit ${rc}, expected /${pattern}/ on stdout:\n${out}\n${err}")
  endif()
endfunction()
file(GLOB lib_dir LIST_DIRECTORIES true ${KJIT_CONSUMER_CUDA_ROOT}/lib64 ${KJIT_CONSUMER_CUDA_ROOT}/lib)
list(GET lib_dir 0 lib_dir)

foreach(variable KJIT_CUDA_HOME CUDA_HOME CUDA_PATH LD_LIBRARY_PATH)
  set(named ${KJIT_CONSUMER_CUDA_ROOT})
  if(variable STREQUAL "LD_LIBRARY_PATH")
    set(named ${lib_dir})
  endif()
  set(env ${CMAKE_COMMAND} -E env ${clean} ${variable}=${named})
  execute_process(COMMAND ${env} ${FINDER} ${PYTHON} -c "${compile}" WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect_ok("${variable}: import kjit (the user site) and compile" "${rc}" "${out}" "${err}"
            "^${KJIT_CONSUMER_CUDA_ROOT}/")
  execute_process(COMMAND ${env} ${FINDER} ${PYTHON} -m kjit ptx k.cu --arch sm_90 WORKING_DIRECTORY ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect_ok("${variable}: python -m kjit ptx (the user site)" "${rc}" "${out}" "${err}" "\\.entry [^\n]*moved")
  if(VENV)
    execute_process(COMMAND ${env} ${VENV}/bin/python -c "${compile}" WORKING_DIRECTORY ${WORK}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    expect_ok("${variable}: import kjit (the venv) and compile" "${rc}" "${out}" "${err}" "^${KJIT_CONSUMER_CUDA_ROOT}/")
    execute_process(COMMAND ${env} ${VENV}/bin/kjit ptx k.cu --arch sm_90 WORKING_DIRECTORY ${WORK}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    expect_ok("${variable}: the venv's kjit ptx" "${rc}" "${out}" "${err}" "\\.entry [^\n]*moved")
  endif()
  message(STATUS "${variable}: the installed package found NVRTC in ${named}")
endforeach()

# None: the package imports, and the compile says where to name the toolkit.
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${FINDER} ${PYTHON} -c
                  "import kjit\ntry:\n  kjit.compile(kjit.Program('k.cu', open('k.cu').read()), arch='sm_90')\nexcept kjit.UnavailableError as e:\n  print('refused:', e)\nelse:\n  print('compiled with', kjit.info()['nvrtc_library'])"
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(out MATCHES "^compiled with [^\n]*nvidia")
  message(STATUS "no variable: Python used pip's CUDA package: ${out}")
elseif(NOT rc EQUAL 0 OR NOT out MATCHES "^refused:" OR NOT out MATCHES "KJIT_CUDA_HOME" OR NOT out MATCHES "CUDA_PATH")
  message(FATAL_ERROR "no variable: import kjit and compile: exit ${rc}\n${out}\n${err}")
endif()
