# ctest python/install_user_site: the README's and docs/python.md's install lines without pip, run
# as they are written, in a scratch HOME:
#  1. kjit installed into ~/.local (the build's own install), then the README's Python line
#     `cmake -S python -B b -G Ninja -DCMAKE_PREFIX_PATH=~/.local && cmake --build b &&
#     cmake --install b --prefix ~/.local`: it must find that kjit (no "no installed kjit found",
#     no "the Python package is off"), build Release with Ninja, and install the package into the
#     user site's path with the kjit command inside (kjit/bin/kjit), py.typed and the stub; it
#     leaves ~/.local/bin/kjit, kjit's own CLI, as it is. `import kjit` from another folder
#     (PYTHONUSERBASE) compiles; `python -m kjit --version` answers as ~/.local/bin/kjit does.
#  2. in a virtual environment (python3 -m venv --without-pip), docs/python.md's
#     `--prefix "$VIRTUAL_ENV"` (the same build folder, its Python the venv's): the venv's Python
#     imports it and its bin/kjit (the console script) runs the CLI. Not tried, saying so, where
#     the venv module is missing.
# Run as: cmake -DBUILD=<kjit build> -DSOURCE=<python/> -DSCRATCH=<dir> -DPYTHON=<python3>
#         -DDLPACK=<dlpack include dir> -DGENERATOR=<generator> [-DLAUNCHER=ccache] -P install_user_site.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect what text pattern)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: expected /${pattern}/ in:\n${text}")
  endif()
endfunction()
function(refuse what text pattern)
  if(text MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: /${pattern}/ must not appear in:\n${text}")
  endif()
endfunction()

set(home ${SCRATCH}/home)
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH}/elsewhere ${home})
set(launcher "")
if(LAUNCHER)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
# The system's python3 first on PATH, as on Debian 12 (the README's line names no Python).
get_filename_component(python_dir ${PYTHON} DIRECTORY)
set(env ${CMAKE_COMMAND} -E env HOME=${home} "PATH=${python_dir}:$ENV{PATH}" --unset=PYTHONPATH --unset=VIRTUAL_ENV
        --unset=CMAKE_BUILD_TYPE --unset=CMAKE_GENERATOR)

# 1. The README's lines, as written (the shell expands nothing in -DCMAKE_PREFIX_PATH=~/.local: CMake does).
run(${env} ${CMAKE_COMMAND} --install ${BUILD} --prefix ${home}/.local)
get_filename_component(sources ${SOURCE} DIRECTORY)
file(READ ${sources}/README.md readme)
string(REGEX MATCH "cmake -S python -B b[^\n]*" line "${readme}")
expect("README.md's Python line" "${line}" "-G Ninja -DCMAKE_PREFIX_PATH=~/.local && cmake --build b && cmake --install b --prefix ~/.local")
string(REGEX REPLACE "  *#.*$" "" line "${line}")
string(REPLACE "cmake " "${CMAKE_COMMAND} ${launcher} " line "${line}")
string(REPLACE "${CMAKE_COMMAND} ${launcher} --build" "${CMAKE_COMMAND} --build" line "${line}")
string(REPLACE "${CMAKE_COMMAND} ${launcher} --install" "${CMAKE_COMMAND} --install" line "${line}")
# In a scratch checkout (python/ linked there): the build folder b/ is made beside it, not in the sources.
file(MAKE_DIRECTORY ${SCRATCH}/checkout)
file(CREATE_LINK ${SOURCE} ${SCRATCH}/checkout/python SYMBOLIC)
set(repo ${SCRATCH}/checkout)
run(${env} sh -c "cd '${repo}' && ${line}")
set(output "${last_output}")
expect("configure" "${output}" "kjit: building the Python package \\(Release\\) against the installed kjit in ${home}/.local")
refuse("configure" "${output}" "no installed kjit found")
refuse("configure" "${output}" "Python package is off")
expect("install" "${output}" "bin/kjit is there already; left as it is")
file(STRINGS ${repo}/b/CMakeCache.txt build_type REGEX "^CMAKE_BUILD_TYPE:")
expect("the build type" "${build_type}" "=Release$")
if(NOT EXISTS ${repo}/b/build.ninja)
  message(FATAL_ERROR "the README's line did not build with Ninja (no b/build.ninja)")
endif()
execute_process(COMMAND ${PYTHON} -c "import sysconfig; print(sysconfig.get_path('platlib', 'posix_user', {'userbase': '.'}))"
                OUTPUT_VARIABLE user_site OUTPUT_STRIP_TRAILING_WHITESPACE)
set(package ${home}/.local/${user_site}/kjit)
foreach(f bin/kjit lib/libkjit.so.0 lib/libkjit_tools.so.0 py.typed _kjit.pyi __main__.py _cli.py _nvrtc.py)
  if(NOT EXISTS ${package}/${f})
    message(FATAL_ERROR "the installed package has no ${f}: ${package}")
  endif()
endforeach()
# The user site is the system Python's (Debian 12's /usr/bin/python3); a virtual environment's
# Python has none, and finds the same folder through PYTHONPATH.
execute_process(COMMAND ${PYTHON} -c "import site; print(site.ENABLE_USER_SITE)" OUTPUT_VARIABLE user_site_enabled
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(user_site_enabled STREQUAL "True")
  set(finder PYTHONUSERBASE=${home}/.local --unset=PYTHONPATH)
else()
  set(finder PYTHONPATH=${home}/.local/${user_site})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${finder} ${PYTHON} -c
                  "import kjit, sys; f = kjit.__file__; assert f.startswith(sys.argv[1]), f; r = kjit.compile(kjit.Program('t.cu', '__global__ void k(int* p) { *p = 1; }'), arch='sm_90'); assert '.entry' in r.ptx; print('installed', f)"
                  ${home}/.local
                WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import kjit from the user site failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
run(${home}/.local/bin/kjit --version)
set(cli_version "${last_output}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${finder} ${PYTHON} -m kjit --version
                WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "${cli_version}")
  message(FATAL_ERROR "python -m kjit --version: exit ${rc}, \"${out}${err}\"; kjit --version: \"${cli_version}\"")
endif()
# Its exit status and stderr are the CLI's: a usage error is 2.
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${finder} ${PYTHON} -m kjit compile --no-such-option
                WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT out STREQUAL "")
  message(FATAL_ERROR "python -m kjit compile --no-such-option: exit ${rc} (expected 2), stdout \"${out}\"")
endif()

# 2. A virtual environment: --prefix "$VIRTUAL_ENV" (docs/python.md).
execute_process(COMMAND ${PYTHON} -m venv --without-pip ${SCRATCH}/venv RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(STATUS "[kjit-note] the virtual environment route is not tried: python3 -m venv failed: ${err}")
else()
  set(venv ${SCRATCH}/venv)
  set(venv_env ${CMAKE_COMMAND} -E env HOME=${home} VIRTUAL_ENV=${venv} "PATH=${venv}/bin:$ENV{PATH}" --unset=PYTHONPATH)
  # The same build folder, its Python now the venv's (named: b/ remembers the first one): the
  # objects stand (same compiler lines), and nothing but the Python changes.
  run(${venv_env} ${CMAKE_COMMAND} -S ${repo}/python -B ${repo}/b -DPython3_EXECUTABLE=${venv}/bin/python)
  run(${venv_env} ${CMAKE_COMMAND} --build ${repo}/b)
  run(${venv_env} ${CMAKE_COMMAND} --install ${repo}/b --prefix ${venv})
  expect("the console script" "${last_output}" "Installing: ${venv}/bin/kjit")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONUSERBASE ${venv}/bin/python -c
                    "import kjit, sys; assert kjit.__file__.startswith(sys.prefix), kjit.__file__; print(kjit.__file__)"
                  WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "import kjit in the virtual environment failed (${rc}):\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONUSERBASE ${venv}/bin/kjit --version
                  WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "${cli_version}")
    message(FATAL_ERROR "the venv's kjit --version: exit ${rc}, \"${out}${err}\"; expected \"${cli_version}\"")
  endif()
  message(STATUS "the virtual environment's kjit: ${out}")
endif()
file(REMOVE_RECURSE ${SCRATCH})
