#!/usr/bin/env python3
"""The corpus of whole programs written for nvcc (tests/data/corpus, issue #56).

  corpus.py add SRC_ROOT FOLDER FILE [--arch sm_90] -- NVCC_FLAGS...
      Copies FILE (a path under SRC_ROOT, a checkout of a public repository) byte for byte into
      tests/data/corpus/FOLDER/ at the same relative path, with every header it includes from that
      checkout (as `nvcc -M` lists them) and the checkout's LICENSE, and records in manifest.json the
      flags and the entry points (mangled kernel names) `nvcc -cubin` gives it.
  corpus.py measure KJIT [--json OUT]
      Compiles every program of the manifest with the kjit CLI KJIT (on the CPU, for its arch) and
      prints, per program, whether its cubin has nvcc's entry points: the before/after count.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "data", "corpus")
MANIFEST = os.path.join(CORPUS, "manifest.json")
NVCC = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")


def cubin_entries(cubin):
    """The kernels of a cubin: FUNC symbols marked as entries (STO_CUDA_ENTRY: other 0x10)."""
    out = subprocess.run(["readelf", "-sW", cubin], capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[-1] for line in out.splitlines() if " FUNC " in line and "[<other>: 10]" in line)


def without_static_prefix(name):
    """nvcc -rdc=true names a static kernel __nv_static_<N>_<N characters of the file's hash and name>_<mangled>:
    the translation unit's prefix no other compiler can give; the kernel is the mangled name after it."""
    if not name.startswith("__nv_static_"):
        return name
    rest = name[len("__nv_static_"):]
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if digits == 0:
        return name
    n = int(rest[:digits])
    return rest[digits + 1 + n + 1:]


def load_manifest():
    if not os.path.exists(MANIFEST):
        return {"about": "", "programs": []}
    with open(MANIFEST) as f:
        return json.load(f)


def save_manifest(m):
    m["programs"].sort(key=lambda p: p["file"])
    with open(MANIFEST, "w") as f:
        json.dump(m, f, indent=1)
        f.write("\n")


def nvcc_deps(src_dir, name, flags):
    """Every file `nvcc -M` says the program reads."""
    r = subprocess.run([NVCC, "-M", *flags, name], cwd=src_dir, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"nvcc -M {name}: {r.stderr}")
    text = r.stdout.replace("\\\n", " ")
    deps = text.split(":", 1)[1].split()
    return [os.path.realpath(os.path.join(src_dir, d)) for d in deps]


def nvcc_cubin_entries(src_dir, name, arch, flags):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "nvcc.cubin")
        r = subprocess.run([NVCC, "-cubin", f"-arch={arch}", *flags, name, "-o", out], cwd=src_dir,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"nvcc -cubin {name}: {r.stdout}{r.stderr}")
        return cubin_entries(out)


def add(args):
    root = os.path.realpath(args.src_root)
    path = os.path.realpath(os.path.join(root, args.file))
    src_dir, name = os.path.dirname(path), os.path.basename(path)
    flags = args.flags
    entries = nvcc_cubin_entries(src_dir, name, args.arch, flags)
    dest_root = os.path.join(CORPUS, args.folder)
    for dep in nvcc_deps(src_dir, name, flags):
        if not dep.startswith(root + os.sep):
            continue
        rel = os.path.relpath(dep, root)
        os.makedirs(os.path.join(dest_root, os.path.dirname(rel)), exist_ok=True)
        shutil.copyfile(dep, os.path.join(dest_root, rel))
    for lic in ("LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING"):
        if os.path.exists(os.path.join(root, lic)):
            shutil.copyfile(os.path.join(root, lic), os.path.join(dest_root, lic))
    m = load_manifest()
    file = os.path.join(args.folder, os.path.relpath(path, root))
    m["programs"] = [p for p in m["programs"] if p["file"] != file]
    m["programs"].append({"file": file, "repository": args.repository, "commit": args.commit, "flags": flags,
                          "arch": args.arch, "nvcc_entries": entries})
    save_manifest(m)
    print(f"{file}: {len(entries)} entries")


def measure_one(kjit, p, cache):
    path = os.path.join(CORPUS, p["file"])
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([kjit, "--cache-dir", cache, "compile", os.path.basename(path), "--arch", p["arch"],
                            "--emit", "cubin", "-o", tmp, "--", *p["flags"]], cwd=os.path.dirname(path),
                           capture_output=True, text=True)
        cubins = [f for f in os.listdir(tmp) if f.endswith(".cubin")]
        if r.returncode != 0 or not cubins:
            lines = r.stderr.splitlines()
            first = next((l for l in lines if "error" in l and not l.startswith("kjit: error:")),
                         next((l for l in lines if "error" in l), r.stderr.strip()[:200]))
            return {"file": p["file"], "ok": False, "why": first[:300]}
        got = cubin_entries(os.path.join(tmp, cubins[0]))
    want = [without_static_prefix(e) for e in p["nvcc_entries"]]
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    warned = all(m.split("_Z", 1)[0] == "" and m in r.stderr or "--instantiate" in r.stderr for m in missing)
    return {"file": p["file"], "ok": not missing and not extra, "missing": missing, "extra": extra,
            "missing_warned": bool(missing) and "--instantiate" in r.stderr}


def measure(args):
    m = load_manifest()
    results = []
    with tempfile.TemporaryDirectory() as cache:
        for p in m["programs"]:
            if args.only and not any(p["file"].startswith(o) for o in args.only):
                continue
            res = measure_one(os.path.realpath(args.kjit), p, cache)
            results.append(res)
            status = "ok" if res["ok"] else ("warned" if res.get("missing_warned") and not res.get("extra") else "FAIL")
            print(f"{status:6} {p['file']} {res.get('why', '')}{' missing ' + ' '.join(res.get('missing', [])) if res.get('missing') else ''}{' extra ' + ' '.join(res['extra']) if res.get('extra') else ''}")
            sys.stdout.flush()
    ok = sum(r["ok"] for r in results)
    warned = sum((not r["ok"]) and r.get("missing_warned", False) and not r.get("extra") for r in results)
    print(f"{ok} of {len(results)} compile with nvcc's entry points; {warned} more lack only host-made instances, named in a warning")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add")
    a.add_argument("src_root")
    a.add_argument("folder")
    a.add_argument("file")
    a.add_argument("--arch", default="sm_90")
    a.add_argument("--repository", required=True)
    a.add_argument("--commit", required=True)
    a.add_argument("flags", nargs=argparse.REMAINDER)
    me = sub.add_parser("measure")
    me.add_argument("kjit")
    me.add_argument("--json")
    me.add_argument("--only", action="append", help="only programs whose file starts with this (repeatable)")
    args = ap.parse_args()
    if args.cmd == "add":
        if args.flags and args.flags[0] == "--":
            args.flags = args.flags[1:]
        add(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
