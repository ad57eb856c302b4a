#!/usr/bin/env python3
"""The doors of the two libraries (ctest build/libkjit_exports_only_what_clients_use): what each
exports, under which version node, and what crosses from libkjit to libkjit_tools.

libkjit.so exports its public API under KJIT_<major> and, under KJIT_PRIVATE_<release> (as glibc's
GLIBC_PRIVATE), the internals libkjit_tools takes: a symbol of a core room's namespace (kjit::system,
kjit::cache, ...: layers.json) is exported only there, and only when libkjit_tools takes it.
libkjit_tools.so exports its own public API alone, under KJIT_TOOLS_<major>. Every symbol
libkjit_tools takes from libkjit is of one of libkjit's two nodes: nothing else crosses. Every
exported symbol is kjit's; run-time type information (typeinfo, its name, the vtable) only of a
public class of namespace kjit, by its plain name (core/libkjit.map.in lists them). The private
node of core/libkjit.map.in names exactly the core rooms' namespaces.

Usage: check_exports.py --nm NM --library libkjit.so --tools libkjit_tools.so --version 0.1.0 --root SRC
(exit 0: all holds, the counts printed; 1: what does not is printed)
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

RUNTIME_PREFIX = re.compile(r"^(typeinfo for |typeinfo name for |vtable for |guard variable for )")
RTTI = re.compile(r"^(typeinfo for |typeinfo name for |vtable for )(.*)$")


def symbols(nm, library, *flags):
    """(name, version, defined) of each dynamic symbol: name demangled, version without its @s
    ("" when unversioned); the version nodes' own absolute symbols left out."""
    done = subprocess.run([nm, "-D", "-C", *flags, library], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"check_exports: {nm} -D -C {' '.join(flags)} {library} failed: {done.stderr.strip()}")
    out = []
    for line in done.stdout.splitlines():
        m = re.match(r"^\s*(?:[0-9a-fA-F]+)?\s*([A-Za-z])\s+(.*)$", line)
        if not m:
            continue
        kind, text = m.groups()
        if kind == "A":
            continue  # a version node's own symbol
        name, version = (text.split("@", 1)[0], text.rsplit("@", 1)[1]) if "@" in text else (text, "")
        out.append((name, version, kind not in ("U", "w", "v")))
    return out


def subject(name):
    """What a symbol names: the function or object, without the runtime's prefix nor a template
    specialization's return type."""
    s = RUNTIME_PREFIX.sub("", name)
    return re.sub(r"^[^(]* (kjit::)", r"\1", s)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nm", default="nm")
    parser.add_argument("--library", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--version", required=True, help="the release (PROJECT_VERSION)")
    parser.add_argument("--root", required=True, help="the source tree (layers.json, core/libkjit.map.in)")
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    major = args.version.split(".")[0]
    public_node, private_node, tools_node = f"KJIT_{major}", f"KJIT_PRIVATE_{args.version}", f"KJIT_TOOLS_{major}"
    problems = []

    rooms = json.loads((root / "layers.json").read_text())["rooms"]
    room_namespaces = {r["namespace"] for r in rooms if r["folder"].startswith("core/") and r.get("namespace")} - {"kjit"}
    template = (root / "core/libkjit.map.in").read_text()
    private_part = template.split("KJIT_PRIVATE_@PROJECT_VERSION@ {", 1)[1] if "KJIT_PRIVATE_@PROJECT_VERSION@ {" in template else ""
    mapped = set(re.findall(r"^\s*(kjit::\w+)::\*;", private_part, re.M))
    if mapped != room_namespaces:
        problems.append(f"core/libkjit.map.in: the private node names {sorted(mapped)}; the core rooms' namespaces "
                        f"(layers.json) are {sorted(room_namespaces)}")
    internal = re.compile(r"^(" + "|".join(re.escape(n) for n in sorted(room_namespaces | {"kjit::profile", "kjit::detail"}))
                          + r")::")

    taken = {(n, v) for n, v, defined in symbols(args.nm, args.tools, "-u") if not defined}
    counts = {}
    for which, path, own_node in (("libkjit", args.library, public_node), ("libkjit_tools", args.tools, tools_node)):
        exported = [(n, v) for n, v, defined in symbols(args.nm, path, "--defined-only") if defined]
        counts[which] = {"all": len(exported), "private": 0, "private_names": set()}
        for name, version in exported:
            rtti = RTTI.match(name)
            if rtti and not re.match(r"^kjit::[A-Za-z_][A-Za-z0-9_]*$", rtti.group(2)):
                problems.append(f"{path}: {name} (the type information of a type that is no public class)")
            s = subject(name)
            if not s.startswith("kjit::"):
                problems.append(f"{path}: {name} (not kjit's)")
                continue
            if internal.match(s):
                if which == "libkjit_tools":
                    problems.append(f"{path}: {name} (a core room's internal, exported by libkjit_tools)")
                elif version != private_node:
                    problems.append(f"{path}: {name}@{version or '(no version)'} (a core room's internal outside "
                                    f"{private_node})")
                elif (name, private_node) not in taken:
                    problems.append(f"{path}: {name} (internal, under {private_node}, and libkjit_tools does not take it)")
                else:
                    counts[which]["private"] += 1
                    counts[which]["private_names"].add(name)
            elif version != own_node:
                problems.append(f"{path}: {name}@{version or '(no version)'} (public, outside {own_node})")

    # What crosses: each symbol libkjit_tools takes from libkjit is of libkjit's two nodes.
    crossing = {"public": 0, "private": 0}
    for name, version in sorted(taken):
        s = subject(name)
        if not s.startswith("kjit::") and not RUNTIME_PREFIX.match(name):
            continue  # the C++ runtime's, libc's, libstdc++'s
        if version == private_node:
            crossing["private"] += 1
            if not internal.match(s):
                problems.append(f"{args.tools}: takes {name} from {private_node}, which holds internals only")
        elif version == public_node:
            crossing["public"] += 1
            if internal.match(s):
                problems.append(f"{args.tools}: takes the internal {name} from {public_node}")
        elif s.startswith("kjit::"):
            problems.append(f"{args.tools}: takes {name}@{version or '(no version)'}: from neither of libkjit's "
                            f"nodes ({public_node}, {private_node})")

    for p in problems:
        print(p)
    print(f"libkjit: {counts['libkjit']['all']} exported symbols, {counts['libkjit']['private']} of them under "
          f"{private_node} ({len(counts['libkjit']['private_names'])} names: a constructor's two symbols are one; "
          f"every one taken by libkjit_tools); libkjit_tools: {counts['libkjit_tools']['all']} "
          f"exported symbols under {tools_node}; libkjit_tools takes {crossing['public']} of {public_node} and "
          f"{crossing['private']} of {private_node}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
