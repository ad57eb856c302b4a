# consumer/toolkit_elsewhere_python (run by toolkit_elsewhere.sh, inside its mount namespace: the
# toolkit kjit was built with is hidden and reachable only at KJIT_CONSUMER_CUDA_ROOT): the Python
# package of kjit's build and its kjit command (#52 item 5).
#  - KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH naming the toolkit there: `import kjit` opens its
#    NVRTC, compiles for sm_90 with its headers, and `python -m kjit` runs the CLI with that NVRTC
#    (it prints the PTX of a random kernel);
#  - none of them: the ImportError names the three variables (unless pip's CUDA packages hold one).
#   cmake -DKJIT_CONSUMER_CUDA_ROOT=<toolkit> -DPYTHON=<python3> -DPACKAGE=<build>/python -DWORK=<dir> -P python_elsewhere.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
string(RANDOM LENGTH 8 ALPHABET 0123456789 value)
file(WRITE ${WORK}/k.cu "__global__ void elsewhere(float* p) { p[threadIdx.x] = ${value}.25f; }\n")
set(clean --unset=KJIT_CUDA_HOME --unset=CUDA_HOME --unset=CUDA_PATH --unset=LD_LIBRARY_PATH PYTHONPATH=${PACKAGE}
    KJIT_CACHE_DIR=${WORK}/cache)
foreach(variable KJIT_CUDA_HOME CUDA_HOME CUDA_PATH)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${variable}=${KJIT_CONSUMER_CUDA_ROOT} ${PYTHON} -c
                    "import kjit; r = kjit.compile(kjit.Program('k.cu', open('k.cu').read()), arch='sm_90'); assert '.entry' in r.ptx; print(kjit.info()['nvrtc_library'])"
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^${KJIT_CONSUMER_CUDA_ROOT}")
    message(FATAL_ERROR "${variable}=${KJIT_CONSUMER_CUDA_ROOT}: import kjit and compile: exit ${rc}\n${out}\n${err}")
  endif()
  message(STATUS "${variable}: NVRTC from ${out}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${variable}=${KJIT_CONSUMER_CUDA_ROOT} ${PYTHON} -m kjit
                          ptx k.cu --arch sm_90
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "\\.entry [^\n]*elsewhere")
    message(FATAL_ERROR "${variable}=${KJIT_CONSUMER_CUDA_ROOT}: python -m kjit ptx: exit ${rc}\n${out}\n${err}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${clean} ${PYTHON} -c "import kjit; print(kjit.info()['nvrtc_library'])"
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  if(NOT out MATCHES "nvidia")
    message(FATAL_ERROR "with the toolkit hidden and no variable set, import kjit found NVRTC at ${out}")
  endif()
  message(STATUS "no variable: NVRTC from pip's CUDA package ${out}")
elseif(NOT err MATCHES "KJIT_CUDA_HOME" OR NOT err MATCHES "CUDA_HOME" OR NOT err MATCHES "CUDA_PATH")
  message(FATAL_ERROR "with the toolkit hidden and no variable set, the ImportError names no variable:\n${err}")
endif()
file(REMOVE_RECURSE ${WORK})
