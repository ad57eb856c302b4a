#!/usr/bin/env python3
"""ctest build/quickstart_then_install (#57 item 3): the README's order, scripts/quickstart.sh then
`cmake --install build --prefix ~/.local`, finds every file it installs. Read from the build graph,
without building: every file a cmake_install.cmake of the build copies from the build folder must be
made by the targets quickstart.sh builds (Ninja's `-t inputs` of them, and the targets' own files).

    check_quickstart_install.py SOURCE BUILD NINJA
"""

import os
import re
import subprocess
import sys


def quickstart_targets(source):
    text = open(os.path.join(source, "scripts", "quickstart.sh")).read()
    m = re.search(r"^cmake --build build --target ([^\n#]+)$", text, re.M)
    if not m:
        sys.exit("scripts/quickstart.sh builds no --target list: cannot tell what it builds")
    return m.group(1).split()


def installed_from_build(build):
    """The build-folder files each install script copies (file(INSTALL ... FILES ...))."""
    out = set()
    for folder, _, files in os.walk(build):
        if "cmake_install.cmake" not in files:
            continue
        text = open(os.path.join(folder, "cmake_install.cmake")).read()
        for call in re.findall(r"file\(INSTALL\b(.*?)\)\s*\n", text, re.S):
            files_part = call.split(" FILES ", 1)
            if len(files_part) < 2:
                continue
            for path in re.findall(r'"([^"]+)"', files_part[1]):
                real = os.path.realpath(path)
                if real.startswith(os.path.realpath(build) + os.sep):
                    out.add(os.path.relpath(real, os.path.realpath(build)))
    return out


def made_by(ninja, build, targets):
    """Every node the targets depend on, order-only ones included (ninja -t query, breadth first)."""
    seen, layer = set(targets), list(targets)
    while layer:
        r = subprocess.run([ninja, "-C", build, "-t", "query"] + layer, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ninja -t query failed: {r.stderr}")
        layer = []
        section = None
        for line in r.stdout.splitlines():
            if not line.startswith(" "):
                section = None  # "node:"
            elif line.strip().startswith("input:"):
                section = "input"
            elif line.strip() == "outputs:":
                section = "outputs"
            elif section == "input":
                node = os.path.normpath(line.strip().lstrip("|").strip())
                if node not in seen:
                    seen.add(node)
                    layer.append(node)
    return seen


def main():
    source, build, ninja = sys.argv[1:4]
    if not os.path.exists(os.path.join(build, "build.ninja")):
        print("[kjit-skip] the build graph is read through Ninja's; this build has another generator")
        return 0
    targets = quickstart_targets(source)
    made = made_by(ninja, build, targets)
    # A shared library's versioned file is made with its links (libkjit.so.0.1.0 and libkjit.so.0).
    made |= {os.path.normpath(os.path.relpath(os.path.realpath(os.path.join(build, m)), os.path.realpath(build)))
             for m in made}
    # Files the build graph makes at all (the exported targets' files are written at configure time).
    r = subprocess.run([ninja, "-C", build, "-t", "targets", "all"], capture_output=True, text=True)
    built = {os.path.normpath(line.rsplit(": ", 1)[0]) for line in r.stdout.splitlines() if ": " in line}
    needed = {n for n in installed_from_build(build) if n in built}
    if not needed:
        sys.exit(f"no install script of {build} copies a file from the build: nothing was checked")
    missing = sorted(n for n in needed if n not in made)
    if missing:
        sys.exit("scripts/quickstart.sh builds " + " ".join(targets) + ", and `cmake --install build` then cannot find: "
                 + ", ".join(missing) + " (add their targets to kjit_installable, cmake/KjitPackaging.cmake)")
    print(f"quickstart.sh's targets ({' '.join(targets)}) make all {len(needed)} files cmake --install copies from "
          f"the build: {', '.join(sorted(needed))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
