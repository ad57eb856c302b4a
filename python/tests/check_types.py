#!/usr/bin/env python3
"""kjit's Python layer as a type checker reads it (ctest python/types): mypy, with python/pyproject.toml's
settings (strict for the package), accepts the package (the pure-Python layer and the extension's stub
kjit/_kjit.pyi), accepts a typed user of it (typing/usage_ok.py, --strict), and reports each mistake of
typing/usage_wrong.py, on the lines marked "# error: CODE" with that code, and nothing else.

Usage: check_types.py [--python PYTHON]   (exit 0: all holds; 1: what does not is printed)
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PYTHON_DIR = HERE.parent
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<message>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")


def mypy(python: str, cache: str, *args: str) -> tuple[int, list[str]]:
    env = dict(os.environ, MYPYPATH=str(PYTHON_DIR / "src"))
    done = subprocess.run([python, "-m", "mypy", "--config-file", str(PYTHON_DIR / "pyproject.toml"),
                           "--cache-dir", cache, "--show-error-codes", "--no-color-output", "--no-error-summary",
                           *args], capture_output=True, text=True, env=env, cwd=PYTHON_DIR)
    if "No module named mypy" in done.stderr:
        sys.exit(f"check_types: {python} has no mypy (Debian: python3-mypy, scripts/install-deps.sh)")
    return done.returncode, (done.stdout + done.stderr).splitlines()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    problems = []
    with tempfile.TemporaryDirectory() as cache:
        code, out = mypy(args.python, cache, "-p", "kjit")
        if code != 0:
            problems.append("mypy refuses the package kjit (python/src/kjit):")
            problems += [f"  {line}" for line in out]
        ok = HERE / "typing" / "usage_ok.py"
        code, out = mypy(args.python, cache, "--strict", str(ok))
        if code != 0:
            problems.append(f"mypy --strict refuses {ok.relative_to(PYTHON_DIR)}, a typed user of the package:")
            problems += [f"  {line}" for line in out]
        wrong = HERE / "typing" / "usage_wrong.py"
        marked = {}
        for n, line in enumerate(wrong.read_text().splitlines(), 1):
            m = re.search(r"# error: ([a-z-]+)$", line)
            if m:
                marked[n] = m.group(1)
        code, out = mypy(args.python, cache, str(wrong))
        found = {}
        for line in out:
            m = ERROR.match(line)
            if m and pathlib.Path(m.group("file")).name == wrong.name:
                found.setdefault(int(m.group("line")), set()).add(m.group("code") or "?")
        if not marked:
            problems.append(f"{wrong.name}: marks no line \"# error: CODE\"")
        for n, want in sorted(marked.items()):
            if want not in found.get(n, set()):
                problems.append(f"{wrong.name}:{n}: mypy should report [{want}] here; it reports "
                                f"{sorted(found.get(n, [])) or 'nothing'}")
        for n in sorted(set(found) - set(marked)):
            problems.append(f"{wrong.name}:{n}: mypy reports {sorted(found[n])} on a line not marked")
        if code == 0:
            problems.append(f"mypy accepts {wrong.name}, which holds {len(marked)} mistakes")
        if not problems:
            print(f"mypy accepts the package and typing/usage_ok.py (--strict), and reports the {len(marked)} "
                  f"mistakes of typing/usage_wrong.py on their lines")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
