#!/usr/bin/env python3
"""The walls: every #include of kjit's library against the rooms of layers.json.

layers.json lists the rooms (folders) top to bottom: for each the rooms it may use and the public
headers (include/kjit/...) it implements. A file belongs to the room of its folder (or of the room
whose "parts" hold it); a public header to the room that claims it. Every file under a room is read,
whatever its name (.cpp, .hpp, .inl, .ipp, .cuh, headers without a suffix; binary files are skipped).
An include of another room's file, or of a public header another room implements, is an arrow,
allowed only when the room lists that room under "uses". Rooms that use "include/kjit" (the CLI,
the examples, the injection library) may include public headers and their own files, nothing
internal. An #include whose name is computed (#include MACRO) is refused: the walls cannot read it.
The rooms are the folders of the two libraries, core/ (libkjit) and tools/ (libkjit_tools); no room
of core/ uses one of tools/, core headers (include/kjit/*.hpp) never include tools headers
(include/kjit/tools/), the two floors core/system/ and core/cache/ include no CUDA header and no
public header, and core/CMakeLists.txt and tools/CMakeLists.txt link each room's object library to
exactly the rooms layers.json lists. Where the tree has an ARCHITECTURE.md that shows the rooms
(between "<!-- rooms: layers.json -->" and "<!-- /rooms -->"), what it shows is layers.json's
(--render prints it), and every name core/ exports for libkjit_tools (KJIT_TOOLS_API) is listed in
its "Exports".

An include in angle brackets of the tree's own folders (<core/...>, <tools/...>) is read like a
quoted one. The list itself must point down: every "uses" entry is a room below its own.

With --objects LIST, the check reads compiled objects instead of includes, and so also sees a call
up the rooms made through a forward declaration: LIST holds one "FOLDER<TAB>OBJECT" line per
object file (FOLDER: the room the object is compiled for, or the source folder its target
compiles from; then the object's path below "<target>.dir/" names its source there). Each
object's undefined symbols (nm: U, and the weak w and v; a versioned name as its plain name) are
resolved against the rooms that define them, and a symbol taken from a room the list does not
allow (the rooms a room uses, and the rooms those use, down the list) is an arrow that breaks it,
unless KNOWN_UPWARD below lists it.

With --sources LIST, the check reads what the build compiles into each room: one
"FOLDER<TAB>SOURCE" line per source of a room's target (its SOURCES property, so a target_sources
added anywhere in CMake is among them); a source must lie in its room's folder (or its parts), or
in the build tree (generated).

Usage: check_layers.py [ROOT] [--objects LIST [--nm NM]] [--sources LIST [--build DIR]] [--render]
       (exit 0: no arrow breaks the rooms; 1: each one is printed)
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

UMBRELLAS = {"kjit.hpp", "tools.hpp"}
CUDA_HEADERS = re.compile(r"^(cuda|cuda_runtime|cuda_runtime_api|nvrtc|nvJitLink|cupti.*|nvperf.*|nvtx3/.*)\.h$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
COMPUTED_INCLUDE = re.compile(r'^\s*#\s*include\s+([A-Za-z_][A-Za-z0-9_]*)')
ROOMS_FILE = "layers.json"
SHOWN_BEGIN, SHOWN_END = "<!-- rooms: layers.json -->", "<!-- /rooms -->"
PUBLIC_ONLY = "include/kjit"
LIBRARIES = ("core/", "tools/")  # the two libraries' folders: each folder in them is a room
FLOORS = ("core/system/", "core/cache/")  # no CUDA, no public header: they store bytes

# Arrows up the table that today's code has, found by --objects, each with why it is there:
# {(from room, to room, demangled symbol): reason}. The check fails on any arrow not listed here,
# and on an entry here that no object uses any more (so the list only ever shrinks). Today it is
# empty: the scan of every room's objects finds no arrow up (a room may take symbols from the rooms
# below those it uses, as compile/ takes system::FileContent through base/'s inline source reader).
KNOWN_UPWARD = {
}


def read_table(root):
    """folder -> {"uses": [...], "headers": [...], "parts": [...], "namespace": str, "row": n} from layers.json."""
    path = root / ROOMS_FILE
    try:
        listed = json.loads(path.read_text())["rooms"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"check_layers: cannot read the rooms from {path}: {e}")
    rooms = {}
    for room in listed:
        folder = room["folder"]
        if folder in rooms:
            sys.exit(f"check_layers: {ROOMS_FILE} lists {folder} twice")
        rooms[folder] = {"uses": list(room.get("uses", [])), "headers": list(room.get("headers", [])),
                         "parts": [folder + part for part in room.get("parts", [])],
                         "namespace": room.get("namespace", ""), "row": len(rooms)}
    if not rooms:
        sys.exit(f"check_layers: {path} lists no room")
    return rooms


def render(rooms):
    """The rooms and their arrows as ARCHITECTURE.md shows them (a fenced block, one room a line)."""
    width = max(len(f) for f in rooms) + 2
    lines = ["```"]
    for folder, r in rooms.items():
        uses = " ".join(u for u in r["uses"]) if r["uses"] else "(nothing of kjit)"
        lines.append(f"{folder:<{width}}-> {uses}")
    lines.append("```")
    return "\n".join(lines)


TOOLS_API = re.compile(r"KJIT_TOOLS_API\s+(?:class\s+(\w+)|[^;(]*?(~?\b\w+)\s*[(;])")


def export_problems(root):
    """Every internal libkjit exports for libkjit_tools (KJIT_TOOLS_API, in core/) is listed in
    ARCHITECTURE.md's "Exports", under the clause of the rule that admits it."""
    doc = root / "ARCHITECTURE.md"
    if not doc.exists() or "\n## Exports\n" not in doc.read_text():
        return []
    section = doc.read_text().split("\n## Exports\n", 1)[1].split("\n## ", 1)[0]
    listed = set()
    for span in re.findall(r"`([^`]+)`", section):
        listed |= set(re.findall(r"~?\w+", span))  # a destructor is listed as `~Name`
    problems = []
    for path in sorted((root / "core").rglob("*.hpp")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = TOOLS_API.search(line.split("//", 1)[0])
            if m and "#define" not in line:
                name = m.group(1) or m.group(2)
                if name not in listed:
                    problems.append(f"{path.relative_to(root)}:{n}: {name} is exported for libkjit_tools "
                                    f"(KJIT_TOOLS_API) but not listed in ARCHITECTURE.md's \"Exports\": list it "
                                    f"under the clause of the rule that admits it, or do not export it")
    return problems


def shown_problems(root, rooms):
    """ARCHITECTURE.md, where it shows the rooms, shows layers.json's."""
    doc = root / "ARCHITECTURE.md"
    if not doc.exists():
        return []
    text = doc.read_text()
    if SHOWN_BEGIN not in text or SHOWN_END not in text:
        return []
    shown = text.split(SHOWN_BEGIN, 1)[1].split(SHOWN_END, 1)[0].strip()
    if shown != render(rooms):
        return [f"ARCHITECTURE.md: the rooms it shows are not {ROOMS_FILE}'s; between {SHOWN_BEGIN} and "
                f"{SHOWN_END} put (tests/check_layers.py --render):\n{render(rooms)}"]
    return []


def table_problems(rooms):
    """Arrows of the list itself: every "uses" entry is a room, and one below its own."""
    problems = []
    for folder, r in rooms.items():
        for used in r["uses"]:
            if used == PUBLIC_ONLY:
                continue
            if used not in rooms:
                problems.append(f"{ROOMS_FILE}: {folder} uses {used}, which is no room of the list")
            elif rooms[used]["row"] <= r["row"]:
                problems.append(f"{ROOMS_FILE}: {folder} uses {used}, a row above its own: "
                                f"a room uses only rooms below it")
            elif folder.startswith("core/") and used.startswith("tools/"):
                problems.append(f"{ROOMS_FILE}: {folder} uses {used}: the core (libkjit) uses no tools room")
    return problems


# Files under a room that hold no C or C++ (the build's own files, prose, Python): not read.
NOT_SOURCE = {".txt", ".cmake", ".map", ".md", ".py", ".pyi", ".json", ".toml", ".in", ".cfg", ".png", ".typed"}


def main():
    parser = argparse.ArgumentParser(description=f"kjit's walls: includes or objects against {ROOMS_FILE}")
    parser.add_argument("root", nargs="?", default=".")
    parser.add_argument("--objects", help='file of "FOLDER<TAB>OBJECT" lines: check symbols instead of includes')
    parser.add_argument("--nm", default="nm")
    parser.add_argument("--sources", help='file of "FOLDER<TAB>SOURCE" lines: check what CMake compiles into each room')
    parser.add_argument("--build", help="the build tree (generated sources may lie there)")
    parser.add_argument("--render", action="store_true", help="print the rooms as ARCHITECTURE.md shows them")
    args = parser.parse_args()
    root = pathlib.Path(args.root).resolve()
    rooms = read_table(root)
    if args.render:
        print(render(rooms))
        return 0
    problems = table_problems(rooms)
    if args.objects:
        return report(problems + symbol_problems(root, rooms, pathlib.Path(args.objects), args.nm),
                      "object(s)", count_objects(args.objects), len(rooms))
    if args.sources:
        return report(problems + cmake_source_problems(root, rooms, pathlib.Path(args.sources), args.build),
                      "source(s)", count_objects(args.sources), len(rooms))
    problems += shown_problems(root, rooms) + export_problems(root)

    header_room = {}
    for folder, r in rooms.items():
        for h in r["headers"]:
            if h in header_room:
                problems.append(f"{ROOMS_FILE}: include/kjit/{h} is claimed by {header_room[h]} and {folder}")
            header_room[h] = folder
    public = sorted(p for p in (root / "include/kjit").rglob("*.hpp"))
    for p in public:
        rel = p.relative_to(root / "include/kjit").as_posix()
        if rel not in header_room and rel not in UMBRELLAS:
            problems.append(f"include/kjit/{rel}: no room of {ROOMS_FILE} claims it (\"headers\")")
    for h, folder in header_room.items():
        if not (root / "include/kjit" / h).exists():
            problems.append(f"{ROOMS_FILE}: {folder} claims include/kjit/{h}, which does not exist")

    def room_of(path):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("include/kjit/"):
            h = rel[len("include/kjit/"):]
            return None if h in UMBRELLAS else header_room.get(h)
        return folder_room(rooms, rel.rsplit("/", 1)[0] + "/")

    tree_tops = {f.split("/", 1)[0] for f in rooms if f != PUBLIC_ONLY and not f.startswith("include/")}
    sources = list(public)
    for folder in rooms:
        d = root / folder
        if not d.is_dir():
            continue
        for p in d.rglob("*"):
            rel = p.relative_to(root).as_posix()
            if not p.is_file() or p.suffix in NOT_SOURCE or p.name == "CMakeLists.txt" \
                    or any(part.startswith(".") or part == "__pycache__" for part in p.parts[len(root.parts):]):
                continue
            if room_of(p) != folder:
                if room_of(p) is None:
                    problems.append(f"{rel}: its folder is no room of {ROOMS_FILE} (nor a room's \"parts\")")
                continue  # a room below this folder reads it
            sources.append(p)

    for path in sorted(set(sources)):
        src_rel = path.relative_to(root).as_posix()
        src_room = room_of(path)
        is_core_header = src_rel.startswith("include/kjit/") and "/tools/" not in src_rel
        data = path.read_bytes()
        if b"\0" in data:
            continue  # not text
        for n, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                computed = COMPUTED_INCLUDE.match(line)
                if computed and src_room is not None:
                    problems.append(f"{src_rel}:{n}: a computed #include ({computed.group(1)}): the walls cannot "
                                    f"read where it goes; include the header by its name")
                continue
            kind, name = m.groups()
            where = f"{src_rel}:{n}"
            if kind == "<" and name.startswith("kjit/"):
                header = name[len("kjit/"):]
                if is_core_header and header.startswith("tools/") and src_rel != "include/kjit/tools.hpp":
                    problems.append(f"{where}: the core header includes the tools header <{name}>")
                if src_room is None:
                    continue  # an umbrella
                if header in UMBRELLAS:
                    if PUBLIC_ONLY not in rooms[src_room]["uses"]:
                        problems.append(f"{where}: {src_room} includes the umbrella <{name}>; include what it uses")
                    continue
                dst_room = header_room.get(header)
                if dst_room is None:
                    problems.append(f"{where}: <{name}> is no public header of the table")
                    continue
                if src_room.startswith(FLOORS):
                    problems.append(f"{where}: {src_room} includes kjit's public header <{name}>")
                    continue
                if dst_room != src_room and PUBLIC_ONLY not in rooms[src_room]["uses"] \
                        and dst_room not in rooms[src_room]["uses"]:
                    problems.append(f"{where}: {src_room} -> {dst_room} (through <{name}>): "
                                    f"not among the rooms {src_room} uses in {ROOMS_FILE}")
                continue
            if kind == "<":
                if src_room and src_room.startswith(FLOORS) and CUDA_HEADERS.match(name):
                    problems.append(f"{where}: {src_room} includes the CUDA header <{name}>")
                # The tree's own folders in angle brackets (every room has the tree on its include
                # path, so they compile): an arrow like a quoted include.
                if name.split("/", 1)[0] not in tree_tops or not (root / name).is_file():
                    continue
                target, spelled = root / name, f"<{name}>"
            else:
                target, spelled = root / name, f'"{name}"'
                if not target.exists():
                    target = path.parent / name
                if not target.exists():
                    continue  # generated or NVRTC-side (__kjit_std.h)
            dst_room = room_of(target.resolve())
            if src_room is None or dst_room == src_room:
                continue
            if PUBLIC_ONLY in rooms[src_room]["uses"]:
                problems.append(f"{where}: {src_room} includes the internal {spelled}; it uses include/kjit/ only")
            elif dst_room is None or dst_room not in rooms[src_room]["uses"]:
                problems.append(f"{where}: {src_room} -> {dst_room} ({spelled}): "
                                f"not among the rooms {src_room} uses in {ROOMS_FILE}")

    names, links, where_linked = {}, {}, {}
    for lib in LIBRARIES:
        cmake = root / lib / "CMakeLists.txt"
        if not cmake.exists():
            continue
        for m in re.finditer(r"^kjit_room\((\w+)\s+(\S+)\s+LIBRARY\s+\w+(?:\s+USES\s+([^)]*))?\)",
                             cmake.read_text(), re.M):
            name, folder, uses = m.group(1), m.group(2).strip('"'), (m.group(3) or "").split()
            names[name] = lib + folder
            links[name] = uses
            where_linked[name] = f"{lib}CMakeLists.txt"
    for name, uses in links.items():
        folder = names[name]
        table = {u for u in rooms.get(folder, {}).get("uses", []) if u in names.values()}
        linked = {names.get(u, u) for u in uses}
        if folder not in rooms:
            problems.append(f"{where_linked[name]}: room {name} ({folder}) is not in {ROOMS_FILE}")
        elif linked != table:
            problems.append(f"{where_linked[name]}: room {name} ({folder}) links {sorted(linked)}, "
                            f"{ROOMS_FILE} says {sorted(table)}")

    return report(problems, "files", len(sources), len(rooms))


def folder_room(rooms, folder):
    """The room a folder ("core/compile/headers/") belongs to: itself, the room whose parts hold it,
    or, outside the two libraries, the nearest room above it (examples/<name>/); None if none."""
    if folder in rooms:
        return folder
    for f, r in rooms.items():
        if any(folder.startswith(part) for part in r["parts"]):
            return f
    for f in sorted(rooms, key=len, reverse=True):
        if folder.startswith(f) and not f.startswith(LIBRARIES):
            return f
    return None


def cmake_source_problems(root, rooms, listing, build):
    """Each source CMake compiles into a room (its target's SOURCES, target_sources included) lies in
    that room's folder or parts, or in the build tree."""
    problems = []
    build_dir = pathlib.Path(build).resolve() if build else None
    for line in listing.read_text().splitlines():
        if not line.strip():
            continue
        folder, source = line.split("\t", 1)
        room = folder.rstrip("/") + "/" if folder else ""
        if room not in rooms:
            problems.append(f"{listing}: {folder} is no room of {ROOMS_FILE}")
            continue
        path = pathlib.Path(source)
        if not path.is_absolute():
            path = root / room / path
        path = path.resolve()
        if build_dir is not None and build_dir in path.parents:
            continue  # generated (core/compile's standard headers)
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            problems.append(f"{room}: CMake compiles {source} into it, a file outside the tree")
            continue
        if folder_room(rooms, rel.rsplit("/", 1)[0] + "/" if "/" in rel else "") != room:
            problems.append(f"{room}: CMake compiles {rel} into it (target_sources?), a file of "
                            f"{folder_room(rooms, rel.rsplit('/', 1)[0] + '/') or 'no room'}: a room compiles "
                            f"only its own folder's sources")
    return problems


def report(problems, what, count, n_rooms):
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s): arrows that break {ROOMS_FILE}, or the walls' own rules")
        return 1
    print(f"check_layers: {count} {what}, {n_rooms} rooms: every arrow is in {ROOMS_FILE}")
    return 0


def count_objects(listing):
    return sum(1 for line in pathlib.Path(listing).read_text().splitlines() if line.strip())


def object_rooms(root, rooms, listing):
    """[(object path, source path relative to root, room)] from the "FOLDER<TAB>OBJECT" lines.

    FOLDER is the object's room when it is one (a unity build's object holds several sources of
    its room and is named after none); otherwise the folder below which the object's path, under
    its CMake <target>.dir/, names its source."""
    out = []
    for line in listing.read_text().splitlines():
        if not line.strip():
            continue
        folder, obj = line.split("\t", 1)
        if folder.rstrip("/") + "/" in rooms:
            room = folder.rstrip("/") + "/"
            out.append((obj, room + re.sub(r"\.(o|obj)$", "", pathlib.PurePosixPath(obj).name), room))
            continue
        below = re.split(r"/[^/]+\.dir/", obj, maxsplit=1)
        if len(below) != 2:
            sys.exit(f"check_layers: {obj}: not below a CMake <target>.dir/ folder; cannot tell its source")
        source = (pathlib.PurePosixPath(folder) / below[1]).as_posix()
        source = re.sub(r"\.(o|obj)$", "", source)
        folder_of_source = source.rsplit("/", 1)[0] + "/" if "/" in source else ""
        room = folder_of_source if folder_of_source in rooms else None
        if room is None:
            sys.exit(f"check_layers: {obj} ({source}): its folder is no room of {ROOMS_FILE}")
        out.append((obj, source, room))
    return out


def run_nm(nm, files):
    """{object: [(symbol, type)]} for every object, from `nm -P -A` (POSIX format)."""
    symbols = {f: [] for f in files}
    for i in range(0, len(files), 200):
        chunk = files[i:i + 200]
        try:
            done = subprocess.run([nm, "-P", "-A", *chunk], capture_output=True, text=True)
        except OSError as e:
            sys.exit(f"check_layers: cannot run nm ({nm}) on the room objects: {e}")
        if done.returncode != 0:
            sys.exit(f"check_layers: {nm} failed on the room objects: {done.stderr.strip()}")
        for line in done.stdout.splitlines():
            head, _, rest = line.rpartition(": ")
            fields = rest.split()
            if head in symbols and len(fields) >= 2:
                symbols[head].append((fields[0], fields[1]))
    return symbols


def demangle(names):
    try:
        done = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        out = done.stdout.splitlines()
        if len(out) == len(names):
            return dict(zip(names, out))
    except (OSError, subprocess.CalledProcessError):
        pass
    return {n: n for n in names}


def allowed_below(rooms):
    """room -> the rooms it may take symbols from: the rooms it uses, and theirs, down the table."""
    closure = {}
    for folder in sorted(rooms, key=lambda f: rooms[f]["row"], reverse=True):
        reach = set()
        for used in rooms[folder]["uses"]:
            if used in rooms and rooms[used]["row"] > rooms[folder]["row"]:
                reach |= {used} | closure.get(used, set())
        closure[folder] = reach
    return closure


def plain(name):
    """A symbol's name without its version ("high@KJIT_1", "high@@KJIT_1": "high")."""
    return name.split("@", 1)[0] if "@" in name and not name.startswith("@") else name


def symbol_problems(root, rooms, listing, nm):
    objects = object_rooms(root, rooms, listing)
    symbols = run_nm(nm, [o for o, _, _ in objects])
    strong, weak = {}, {}  # symbol -> rooms that define it (a versioned name as its plain name)
    for obj, _, room in objects:
        for name, kind in symbols[obj]:
            name = plain(name)
            if kind in "TDBRGSC" or kind == "u":
                strong.setdefault(name, set()).add(room)
            elif kind in "WV":
                weak.setdefault(name, set()).add(room)
    allowed = allowed_below(rooms)
    arrows = {}  # (from, to, symbol) -> [source]
    for obj, source, room in objects:
        for name, kind in symbols[obj]:
            if kind not in ("U", "w", "v"):  # undefined: a strong, weak ([[gnu::weak]]) or weak object use
                continue
            name = plain(name)
            defining = strong.get(name) or weak.get(name)
            if not defining or room in defining or defining & allowed[room]:
                continue  # outside kjit (libc, fmt, the driver), its own, or a room below it may serve it
            for to in sorted(defining):
                arrows.setdefault((room, to, name), []).append(source)
    names = demangle(sorted({name for _, _, name in arrows} | {k[2] for k in KNOWN_UPWARD}))
    problems, seen_known = [], set()
    for (src, dst, name), sources in sorted(arrows.items()):
        key = (src, dst, names[name])
        if key in KNOWN_UPWARD:
            seen_known.add(key)
            print(f"known: {src} -> {dst} ({names[name]}) in {', '.join(sorted(set(sources)))}: "
                  f"{KNOWN_UPWARD[key]}")
            continue
        problems.append(f"{', '.join(sorted(set(sources)))}: {src} -> {dst} (the symbol {names[name]}): "
                        f"not among the rooms {src} uses in {ROOMS_FILE}, nor below them")
    for key in sorted(set(KNOWN_UPWARD) - seen_known):
        problems.append(f"check_layers.py: KNOWN_UPWARD lists {key[0]} -> {key[1]} ({key[2]}), which no "
                        f"object uses any more: remove it from the list")
    return problems


if __name__ == "__main__":
    sys.exit(main())
