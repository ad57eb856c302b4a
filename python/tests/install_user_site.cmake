# ctest python/install_user_site: the Debian 12 install route of docs/python.md, in a scratch
# prefix: kjit installed (the build's own install), then `cmake -S python` built against it and
# installed with --prefix into the user site's path there; `import kjit` from another folder with
# PYTHONUSERBASE pointing at the prefix finds it, and it compiles (libkjit from the package).
# Run as: cmake -DBUILD=<kjit build> -DSOURCE=<python/> -DSCRATCH=<dir> -DPYTHON=<python3>
#         -DDLPACK=<dlpack include dir> -DGENERATOR=<generator> -P install_user_site.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH}/elsewhere)
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${SCRATCH}/kjit)
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${SCRATCH}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${SCRATCH}/kjit -DPython3_EXECUTABLE=${PYTHON} -DDLPACK_INCLUDE_DIR=${DLPACK})
run(${CMAKE_COMMAND} --build ${SCRATCH}/build)
run(${CMAKE_COMMAND} --install ${SCRATCH}/build --prefix ${SCRATCH}/user)
# The user site is the system Python's (Debian 12's /usr/bin/python3); a virtual environment's
# Python has none, and finds the same folder through PYTHONPATH.
execute_process(COMMAND ${PYTHON} -c "import site, sysconfig; print(site.ENABLE_USER_SITE); print(sysconfig.get_path('platlib', 'posix_user', {'userbase': '.'}))"
                OUTPUT_VARIABLE site_info OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" site_info "${site_info}")
list(GET site_info 0 user_site_enabled)
list(GET site_info 1 user_site)
if(user_site_enabled STREQUAL "True")
  set(finder PYTHONUSERBASE=${SCRATCH}/user --unset=PYTHONPATH)
else()
  set(finder PYTHONPATH=${SCRATCH}/user/${user_site})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${finder} ${PYTHON} -c
                  "import kjit, sys; f = kjit.__file__; assert f.startswith(sys.argv[1]), f; r = kjit.compile(kjit.Program('t.cu', '__global__ void k(int* p) { *p = 1; }'), arch='sm_90'); assert '.entry' in r.ptx; print('installed', f)"
                  ${SCRATCH}/user
                WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import kjit from the user site failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
file(REMOVE_RECURSE ${SCRATCH})
