# ctest python/install_user_site: the README's and docs/python.md's install lines without pip, run
# as they are written, in a scratch HOME:
#  1. kjit installed into ~/.local (the build's own install), then the README's Python line
#     `cmake -S python -B b -G Ninja -DCMAKE_PREFIX_PATH=~/.local && cmake --build b &&
#     cmake --install b --prefix ~/.local`: it must find that kjit (no "no installed kjit found",
#     no "the Python package is off"), build Release with Ninja, and install the package into the
#     user site's path with the kjit command inside (kjit/bin/kjit), py.typed and the stub; it
#     leaves ~/.local/bin/kjit, kjit's own CLI, as it is. The package links to that kjit (#57 item
#     4): no copy of its libraries, kjit/bin/kjit a link to its CLI, the extension's run path its
#     lib/ folder and no libnvrtc among its needs (#57 item 1). `import kjit` from another folder
#     (PYTHONUSERBASE) compiles; `python -m kjit --version` answers as ~/.local/bin/kjit does.
#  2. in a virtual environment (python3 -m venv --without-pip), docs/python.md's venv line as
#     written (its own build folder, b-venv: #57 item 5): the venv's Python imports it and its
#     bin/kjit (the console script) runs the CLI with the venv's Python. Not tried, saying so,
#     where the venv module is missing.
#  3. with TOOLKIT hidden where it is and reachable only at another path (toolkit_elsewhere.sh:
#     root and a mount namespace; skipped otherwise, saying so): both installs run from there
#     (python_elsewhere.cmake, #57 item 1).
# Run as: cmake -DBUILD=<kjit build> -DSOURCE=<python/> -DSCRATCH=<dir> -DPYTHON=<python3>
#         -DDLPACK=<dlpack include dir> -DGENERATOR=<generator> [-DLAUNCHER=ccache] [-DTOOLKIT=<root>]
#         -P install_user_site.cmake
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
foreach(f bin/kjit py.typed _kjit.pyi __main__.py _cli.py _nvrtc.py)
  if(NOT EXISTS ${package}/${f})
    message(FATAL_ERROR "the installed package has no ${f}: ${package}")
  endif()
endforeach()
# Linked to the installed kjit, not a copy of it (#57 item 4): no library of kjit's in the package,
# its command a link to ~/.local/bin/kjit, and all of it far smaller than libkjit alone.
file(GLOB copies ${package}/lib/*)
if(copies)
  message(FATAL_ERROR "the package copies the installed kjit's libraries: ${copies}")
endif()
if(NOT IS_SYMLINK ${package}/bin/kjit)
  message(FATAL_ERROR "${package}/bin/kjit is a copy, not a link to ${home}/.local/bin/kjit")
endif()
file(READ_SYMLINK ${package}/bin/kjit cli_target)
if(NOT cli_target STREQUAL "${home}/.local/bin/kjit")
  message(FATAL_ERROR "${package}/bin/kjit links to ${cli_target}, not ${home}/.local/bin/kjit")
endif()
file(GLOB_RECURSE package_files ${package}/*)
set(package_bytes 0)
foreach(f IN LISTS package_files)
  if(IS_SYMLINK ${f})
    continue()  # bin/kjit, the installed CLI: not in site-packages
  endif()
  file(SIZE ${f} bytes)
  math(EXPR package_bytes "${package_bytes} + ${bytes}")
endforeach()
file(GLOB libkjit ${home}/.local/lib/libkjit.so.*.*.*)
file(SIZE ${libkjit} libkjit_bytes)
if(package_bytes GREATER libkjit_bytes)
  message(FATAL_ERROR "the package holds ${package_bytes} bytes, more than libkjit itself (${libkjit_bytes})")
endif()
message(STATUS "the package: ${package_bytes} bytes in site-packages (libkjit: ${libkjit_bytes})")
# The extension records no libnvrtc and no toolkit folder (#57 item 1): NVRTC is libkjit's to open.
file(GLOB extension ${package}/_kjit*.so)
find_program(readelf readelf)
if(readelf)
  run(${readelf} -d ${extension})
  refuse("the extension's needs" "${last_output}" "NEEDED[^\n]*libnvrtc")
  refuse("the extension's run path" "${last_output}" "R(UN)?PATH[^\n]*/cuda")
  expect("the extension's run path" "${last_output}" "R(UN)?PATH[^\n]*${home}/.local/lib")
endif()
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

# 2. A virtual environment: docs/python.md's venv line, as written (its own build folder).
execute_process(COMMAND ${PYTHON} -m venv --without-pip ${SCRATCH}/venv RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
set(venv "")
if(NOT rc EQUAL 0)
  message(STATUS "[kjit-note] the virtual environment route is not tried: python3 -m venv failed: ${err}")
else()
  set(venv ${SCRATCH}/venv)
  file(READ ${sources}/docs/python.md python_md)
  string(REGEX MATCH "cmake -S python -B ([^ ]+) [^\n]*--prefix \"[$]VIRTUAL_ENV\"" venv_line "${python_md}")
  expect("docs/python.md's venv line" "${venv_line}" "cmake --install ")
  if(CMAKE_MATCH_1 STREQUAL "b")
    message(FATAL_ERROR "docs/python.md's venv line reuses the build folder b, which remembers the first route's Python")
  endif()
  string(REPLACE "cmake -S" "${CMAKE_COMMAND} ${launcher} -S" venv_line "${venv_line}")
  string(REPLACE "cmake --" "${CMAKE_COMMAND} --" venv_line "${venv_line}")
  set(venv_env ${CMAKE_COMMAND} -E env HOME=${home} VIRTUAL_ENV=${venv} "PATH=${venv}/bin:$ENV{PATH}" --unset=PYTHONPATH)
  run(${venv_env} sh -c "cd '${repo}' && ${venv_line}")
  expect("the console script" "${last_output}" "Installing: ${venv}/bin/kjit")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONUSERBASE ${venv}/bin/python -c
                    "import kjit, sys; assert kjit.__file__.startswith(sys.prefix), kjit.__file__; print(kjit.__file__)"
                  WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "import kjit in the virtual environment failed (${rc}):\n${out}\n${err}")
  endif()
  # The console script runs the venv's Python, not the first route's.
  file(STRINGS ${venv}/bin/kjit shebang LIMIT_COUNT 1)
  expect("the venv's kjit script" "${shebang}" "^#!${venv}/bin/python")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONUSERBASE ${venv}/bin/kjit --version
                  WORKING_DIRECTORY ${SCRATCH}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "${cli_version}")
    message(FATAL_ERROR "the venv's kjit --version: exit ${rc}, \"${out}${err}\"; expected \"${cli_version}\"")
  endif()
  message(STATUS "the virtual environment's kjit: ${out}")
endif()

# 3. The toolkit elsewhere: both installs, run from another folder with the toolkit hidden.
if(TOOLKIT)
  execute_process(COMMAND sh ${SOURCE}/../tests/consumer/toolkit_elsewhere.sh ${SCRATCH}/toolkit_ns ${TOOLKIT}
                          ${CMAKE_COMMAND} "-DFINDER=${finder}" -DPYTHON=${PYTHON} -DVENV=${venv} -DHOME=${home}
                          -DWORK=${SCRATCH}/elsewhere -P ${SOURCE}/tests/python_elsewhere.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the installs with the toolkit elsewhere failed (${rc})")
  endif()
endif()
file(REMOVE_RECURSE ${SCRATCH})
