#!/usr/bin/env python3
"""The walls: every #include of kjit's library against ARCHITECTURE.md's table of rooms.

Each row of the table names a room (a folder), the rooms it may use, and the public headers
(include/kjit/...) it implements. A file belongs to the room of its folder; a public header to
the room that claims it. An include of another room's file, or of a public header another room
implements, is an arrow, allowed only when the table lists that room under "uses". Rooms that use
"include/kjit" (the CLI, the examples, the injection library) may include public headers and their
own files, nothing internal. Core headers (include/kjit/*.hpp) never include tools headers
(include/kjit/tools/), cache/ includes no CUDA header, and runtime/CMakeLists.txt links each room's
object library to exactly the rooms the table lists.

Usage: check_layers.py [ROOT]   (exit 0: no arrow breaks the table; 1: each one is printed)
"""
import pathlib
import re
import sys

UMBRELLAS = {"kjit.hpp", "tools.hpp"}
CUDA_HEADERS = re.compile(r"^(cuda|cuda_runtime|cuda_runtime_api|nvrtc|nvJitLink|cupti.*|nvperf.*|nvtx3/.*)\.h$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
PUBLIC_ONLY = "include/kjit"


def read_table(root):
    """folder -> {"uses": [...], "headers": [...]} from ARCHITECTURE.md's folder table."""
    rooms = {}
    text = (root / "ARCHITECTURE.md").read_text()
    header_seen = False
    for line in text.splitlines():
        if line.startswith("| folder |"):
            cols = [c.strip() for c in line.strip("|").split("|")]
            header_seen = True
            i_uses, i_headers = cols.index("uses"), cols.index("public headers")
            continue
        if not header_seen or not line.startswith("| `"):
            if header_seen and rooms and not line.startswith("|"):
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        folder = re.findall(r"`([^`]+)`", cells[0])[0]
        uses = re.findall(r"`([^`]+)`", cells[i_uses])
        headers = re.findall(r"`([^`]+)`", cells[i_headers])
        if uses or headers or folder.startswith(("runtime/", "cache/")):  # tests/, docs/, ...: not rooms
            rooms[folder] = {"uses": uses, "headers": headers}
    if not rooms:
        sys.exit("check_layers: no folder table (| folder | ... | uses | public headers | ...) in ARCHITECTURE.md")
    return rooms


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    rooms = read_table(root)
    problems = []

    header_room = {}
    for folder, r in rooms.items():
        for h in r["headers"]:
            if h in header_room:
                problems.append(f"ARCHITECTURE.md: include/kjit/{h} is claimed by {header_room[h]} and {folder}")
            header_room[h] = folder
    public = sorted(p for p in (root / "include/kjit").rglob("*.hpp"))
    for p in public:
        rel = p.relative_to(root / "include/kjit").as_posix()
        if rel not in header_room and rel not in UMBRELLAS:
            problems.append(f"include/kjit/{rel}: no room of ARCHITECTURE.md's table claims it (column 'public headers')")
    for h, folder in header_room.items():
        if not (root / "include/kjit" / h).exists():
            problems.append(f"ARCHITECTURE.md: {folder} claims include/kjit/{h}, which does not exist")

    def room_of(path):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("include/kjit/"):
            h = rel[len("include/kjit/"):]
            return None if h in UMBRELLAS else header_room.get(h)
        folder = rel.rsplit("/", 1)[0] + "/"
        if folder in rooms:
            return folder
        for f in sorted(rooms, key=len, reverse=True):  # examples/<name>/
            if folder.startswith(f) and not f.startswith(("runtime/", "cache/")):
                return f
        return None

    sources = list(public)
    for folder in rooms:
        d = root / folder
        if d.is_dir():
            for p in d.iterdir() if folder.startswith(("runtime/", "cache/")) else d.rglob("*"):
                if p.suffix in (".cpp", ".hpp", ".h", ".cu") and p.is_file():
                    sources.append(p)
    for top in ("runtime", "cache"):
        for p in (root / top).rglob("*.[ch]pp"):
            if room_of(p) is None:
                problems.append(f"{p.relative_to(root)}: its folder is no room of ARCHITECTURE.md's table")

    for path in sorted(set(sources)):
        src_rel = path.relative_to(root).as_posix()
        src_room = room_of(path)
        is_core_header = src_rel.startswith("include/kjit/") and "/tools/" not in src_rel
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
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
                if src_room.startswith("cache/"):
                    problems.append(f"{where}: cache/ includes kjit's public header <{name}>")
                    continue
                if dst_room != src_room and PUBLIC_ONLY not in rooms[src_room]["uses"] \
                        and dst_room not in rooms[src_room]["uses"]:
                    problems.append(f"{where}: {src_room} -> {dst_room} (through <{name}>): "
                                    f"not among the rooms {src_room} uses in ARCHITECTURE.md")
                continue
            if kind == "<":
                if src_room and src_room.startswith("cache/") and CUDA_HEADERS.match(name):
                    problems.append(f"{where}: cache/ includes the CUDA header <{name}>")
                continue
            target = root / name
            if not target.exists():
                target = path.parent / name
            if not target.exists():
                continue  # generated or NVRTC-side (__kjit_std.h)
            dst_room = room_of(target.resolve())
            if src_room is None or dst_room == src_room:
                continue
            if PUBLIC_ONLY in rooms[src_room]["uses"]:
                problems.append(f"{where}: {src_room} includes the internal \"{name}\"; it uses include/kjit/ only")
            elif dst_room is None or dst_room not in rooms[src_room]["uses"]:
                problems.append(f"{where}: {src_room} -> {dst_room} (\"{name}\"): "
                                f"not among the rooms {src_room} uses in ARCHITECTURE.md")

    cmake = root / "runtime/CMakeLists.txt"
    if cmake.exists():
        names = {}
        links = {}
        for m in re.finditer(r"^kjit_room\((\w+)\s+(\S+)(?:\s+USES\s+([^)]*))?\)", cmake.read_text(), re.M):
            name, folder, uses = m.group(1), m.group(2).strip('"'), (m.group(3) or "").split()
            names[name] = "runtime/" + folder
            links[name] = uses
        for name, uses in links.items():
            folder = names[name]
            table = {u for u in rooms.get(folder, {}).get("uses", []) if u.startswith("runtime/")}
            linked = {names.get(u, u) for u in uses}
            if folder not in rooms:
                problems.append(f"runtime/CMakeLists.txt: room {name} ({folder}) is not in ARCHITECTURE.md's table")
            elif linked != table:
                problems.append(f"runtime/CMakeLists.txt: room {name} ({folder}) links {sorted(linked)}, "
                                f"ARCHITECTURE.md says {sorted(table)}")

    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} arrow(s) break ARCHITECTURE.md's table")
        return 1
    print(f"check_layers: {len(sources)} files, {len(rooms)} rooms: every arrow is in ARCHITECTURE.md's table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
