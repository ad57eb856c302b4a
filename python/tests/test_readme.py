"""The README's snippets as a user copies them (issue #52 item 19): the Python snippet names
nothing it does not import or that the reader must bring (the kernel source, sizes, tensors),
and the Profiling snippet compiles with the include it shows (kjit::Profiler is in
<kjit/tools.hpp>, library kjit::tools)."""
import builtins
import pathlib
import re
import shutil
import subprocess
import symtable

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()

# What a snippet may take from the reader's program.
READER_NAMES = {"src", "w", "h", "x", "y"}


def blocks(language):
    return re.findall(r"```" + language + r"\n(.*?)```", README, re.S)


def free_names(code):
    """Names a module-level snippet reads that nothing in it binds and that are no builtins."""
    module = symtable.symtable(code, "README", "exec")
    bound = {s.get_name() for s in module.get_symbols() if s.is_assigned() or s.is_imported()}
    free = set()

    def walk(table, top):
        for symbol in table.get_symbols():
            name = symbol.get_name()
            reads_outside = top or symbol.is_global() or symbol.is_free()
            if symbol.is_referenced() and reads_outside and name not in bound and not hasattr(builtins, name):
                free.add(name)
        for child in table.get_children():
            walk(child, False)

    walk(module, True)
    return free


def test_python_snippets_import_what_they_use():
    snippets = blocks("python")
    assert snippets, "the README has a Python snippet"
    for code in snippets:
        missing = free_names(code) - READER_NAMES
        assert not missing, f"README's Python snippet uses {sorted(missing)} without importing them:\n{code}"


def test_the_free_name_check_can_fail():
    assert free_names("y = math.ceil(w / 16)\n") == {"math", "w"}
    assert free_names("import math\ny = math.ceil(w / 16)\n") == {"w"}


def profiling_snippet():
    section = README.split("## Profiling", 1)[1]
    return re.search(r"```cpp\n(.*?)```", section, re.S).group(1)


def test_profiling_snippet_shows_the_header_and_the_library():
    code = profiling_snippet()
    assert "#include <kjit/tools.hpp>" in code
    assert "kjit::tools" in code


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compile the snippet")
def test_profiling_snippet_compiles(tmp_path):
    code = profiling_snippet()
    includes = [line for line in code.splitlines() if line.startswith("#include")]
    body = [line for line in code.splitlines() if not line.startswith("#include")]
    program = "\n".join(["#include <iostream>", *includes, "void step();", "void profile_step() {", *body, "}", ""])
    (tmp_path / "snippet.cpp").write_text(program)
    r = subprocess.run(["g++", "-std=c++20", "-fsyntax-only", f"-I{ROOT / 'include'}", str(tmp_path / "snippet.cpp")],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"{program}\n{r.stderr[:4000]}"
