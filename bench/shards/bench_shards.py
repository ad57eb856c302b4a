#!/usr/bin/env python3
"""How `kjit warm --shard I/N` scales: the manifest of make_manifest.py (kjit's lecture kernels over
their template parameters and tile sizes; about 10,000 items at 3 archs) warmed by N shard
processes at once, each `kjit warm --shard i/N -j 1` in an empty cache of its own (as N machines
would), each writing its bundle; then the N bundles merged.

For each N it prints and records: the wall time (first start to last exit), compiles per second,
the speed-up against N = 1 measured in the same run (the floor) and its ratio to N; and checks
what must hold whatever the timing: the shards' items are disjoint and make up the whole, the
NVRTC compiles summed from the caches' own counters (`kjit cache stats`) equal the items (0
duplicate compiles), and the merged bundle's entries are byte for byte N = 1's (their records,
in key order).

One command writes everything into OUT: results.json, results.md (the table), a plot
(shards.png with matplotlib, else a text plot in results.md), machine.txt:

    bench/shards/bench_shards.py --kjit build/cli/kjit --shards 1,2,4,8,16 \\
        --out bench/results/$(date +%F)-$(hostname)-shards
    bench/shards/bench_shards.py --variants 200 --shards 1,2 ...    # a sample: 600 items

Exit status 1 when a check fails (a failed item, a duplicate compile, a merge that differs).
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def records(bundle):
    """The bytes of a bundle's records (docs/bundles.md: from the header's end to records_end)."""
    data = pathlib.Path(bundle).read_bytes()
    assert data.endswith(b"KJBNDONE"), f"{bundle}: no completion marker"
    trailer_size = struct.unpack("<I", data[-12:-8])[0]
    trailer = data[len(data) - trailer_size:]
    assert trailer[:8] == b"KJBTRAIL", f"{bundle}: no trailer"
    records_end = struct.unpack("<Q", trailer[8:16])[0]
    return data[32:records_end]


def run_n(kjit, manifest, archs, n, jobs, work, env):
    """N shard processes at once; their reports, counters and the merged bundle."""
    work.mkdir(parents=True)
    procs = []
    start = time.perf_counter()
    for i in range(n):
        cmd = [kjit, "--cache-dir", str(work / f"cache{i}"), "--json", "-q", "warm", str(manifest), "--arch", archs,
               "-j", str(jobs), "--shard", f"{i}/{n}", "--bundle", str(work / f"shard{i}.kjb")]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    outs = []
    for p in procs:
        out, err = p.communicate()
        outs.append((p.returncode, out, err))
    wall = time.perf_counter() - start

    reports, compiles, failures = [], 0, []
    for i, (code, out, err) in enumerate(outs):
        try:
            r = json.loads(out)
        except json.JSONDecodeError:
            failures.append(f"N={n} shard {i}: exit {code}, no report: {err.strip()[-2000:]}")
            continue
        reports.append(r)
        if code != 0:
            failures.append(f"N={n} shard {i}: exit {code}: {err.strip()[-2000:]}")
        stats = json.loads(subprocess.run([kjit, "--cache-dir", str(work / f"cache{i}"), "--json", "cache", "stats"],
                                          capture_output=True, text=True, env=env, check=True).stdout)
        compiles += stats["compiles"]
    merged = work / "merged.kjb"
    m = subprocess.run([kjit, "--json", "cache", "bundle", "merge", *[str(work / f"shard{i}.kjb") for i in range(n)],
                        "-o", str(merged)], capture_output=True, text=True, env=env)
    if m.returncode != 0:
        failures.append(f"N={n}: merge: {m.stderr.strip()}")
    keys = [item["key"] for r in reports for item in r["items"]]
    return {
        "n": n,
        "wall_s": wall,
        "items": len(keys),
        "distinct_items": len(set(keys)),
        "compiled": sum(r["compiled"] for r in reports),
        "failed": sum(r["failed"] for r in reports),
        "nvrtc_compiles": compiles,  # the caches' own counters
        "per_shard_items": [len(r["items"]) for r in reports],
        "per_shard_wall_s": [r["wall_ms"] / 1000 for r in reports],
        "merged": str(merged) if m.returncode == 0 else None,
        "failures": failures,
    }


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "load_at_start": load, "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}


def text_plot(rows):
    """Speed-up against N as text: a bar per N, the ideal (N) marked with |."""
    top = max(max(r["n"] for r in rows), max(r["speedup"] for r in rows))
    width = 50
    lines = ["speed-up against N (# measured, | ideal N)"]
    for r in rows:
        bar = int(round(r["speedup"] / top * width))
        ideal = int(round(r["n"] / top * width))
        line = ["#" if i < bar else " " for i in range(width + 1)]
        line[min(ideal, width)] = "|"
        lines.append(f"N={r['n']:>3} {''.join(line)} {r['speedup']:.2f}x")
    return "\n".join(lines)


def plot(rows, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ns = [r["n"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(ns, [r["speedup"] for r in rows], "o-", label="measured")
    a.plot(ns, ns, "--", color="grey", label="ideal (N)")
    a.plot(ns, [0.85 * n for n in ns], ":", color="grey", label="0.85 N")
    a.set_xlabel("shard processes N")
    a.set_ylabel("speed-up against N = 1")
    a.legend()
    b.plot(ns, [r["compiles_per_s"] for r in rows], "o-")
    b.set_xlabel("shard processes N")
    b.set_ylabel("compiles per second")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"kjit warm --shard i/N: {rows[0]['items']} items")
    fig.tight_layout()
    path = out / "shards.png"
    fig.savefig(path, dpi=120)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description="kjit warm --shard I/N with N = 1, 2, 4, ... processes (see the top).")
    p.add_argument("--kjit", default=str(ROOT / "build" / "cli" / "kjit"), help="the kjit executable")
    p.add_argument("--variants", type=int, default=3334, help="make_manifest.py's --variants (x archs = items)")
    p.add_argument("--archs", default="sm_80,sm_89,sm_90", help="the archs warmed (default 3)")
    p.add_argument("--shards", default="1,2,4,8,16", help="the N to run, comma-separated (1 first: the floor)")
    p.add_argument("--jobs", type=int, default=1, help="-j of each shard process (default 1)")
    p.add_argument("--out", required=True, help="the results folder (made)")
    p.add_argument("--work", help="scratch folder (default: a temporary one, removed)")
    args = p.parse_args(argv)
    ns = [int(x) for x in args.shards.split(",") if x]
    if not ns or ns[0] != 1:
        p.error("--shards must start with 1 (the floor the others are measured against)")

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(args.work) if args.work else pathlib.Path(tempfile.mkdtemp(prefix="kjit-bench-shards-"))
    env = dict(os.environ)
    for name in ("KJIT_REMOTE_CACHE", "KJIT_REQUIRE_HIT", "KJIT_CACHE_DISABLE", "KJIT_ALWAYS_COMPILE", "KJIT_DUMP_DIR",
                 "KJIT_REMOTE_SIGNING_KEY_FILE", "KJIT_REMOTE_SECRET_FILE", "KJIT_REMOTE_PUBLIC_KEY_FILE"):
        env.pop(name, None)
    env["KJIT_CACHE_MAX_SIZE"] = "0"  # no eviction: every entry stays for the bundle

    info = machine()
    version = subprocess.run([args.kjit, "--json", "info"], capture_output=True, text=True, env=env)
    if version.returncode == 0:
        j = json.loads(version.stdout)
        info.update({"kjit": j.get("kjit_version"), "nvrtc": j.get("nvrtc_version")})
    manifest = work / "kernels"
    subprocess.run([sys.executable, str(HERE / "make_manifest.py"), str(manifest), "--variants", str(args.variants)],
                   check=True)
    items = args.variants * len(args.archs.split(","))
    print(f"{items} items ({args.variants} variants x {args.archs}), N = {ns}, -j {args.jobs} each, "
          f"{info['cores']} cores ({info['cpu']}), load {info['load_at_start'][0]:.1f}", flush=True)

    rows, failures, floor = [], [], None
    try:
        for n in ns:
            r = run_n(args.kjit, manifest, args.archs, n, args.jobs, work / f"n{n}", env)
            failures += r["failures"]
            if r["failed"]:
                failures.append(f"N={n}: {r['failed']} items failed")
            if r["items"] != items or r["distinct_items"] != items:
                failures.append(f"N={n}: the shards hold {r['items']} items ({r['distinct_items']} distinct), not {items}")
            r["duplicate_compiles"] = r["nvrtc_compiles"] - r["distinct_items"]
            if r["duplicate_compiles"] != 0 or r["compiled"] != items:
                failures.append(f"N={n}: {r['nvrtc_compiles']} NVRTC compiles by the counters, {r['compiled']} "
                                f"reported, for {items} items")
            if r["merged"]:
                mine = records(r["merged"])
                if floor is None:
                    floor = {"wall_s": r["wall_s"], "records": mine}
                r["merged_identical_to_n1"] = mine == floor["records"]
                if not r["merged_identical_to_n1"]:
                    failures.append(f"N={n}: the merged bundle's entries differ from N=1's")
            r["compiles_per_s"] = r["compiled"] / r["wall_s"]
            r["speedup"] = floor["wall_s"] / r["wall_s"] if floor else 0.0
            r["efficiency"] = r["speedup"] / n
            rows.append(r)
            print(f"N={n:>3}: {r['wall_s']:8.1f} s  {r['compiles_per_s']:7.2f} compiles/s  speed-up {r['speedup']:5.2f} "
                  f"({r['efficiency']:.2f} N)  duplicates {r['duplicate_compiles']}  merged = N=1: "
                  f"{r.get('merged_identical_to_n1')}", flush=True)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    for r in rows:
        r.pop("merged", None)
    table = ["| N | wall s | compiles/s | speed-up vs N=1 | speed-up / N | items per shard (min-max) | NVRTC compiles "
             "(counters) | duplicate compiles | merged = N=1 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(f"| {r['n']} | {r['wall_s']:.1f} | {r['compiles_per_s']:.2f} | {r['speedup']:.2f} | "
                     f"{r['efficiency']:.2f} | {min(r['per_shard_items'])}-{max(r['per_shard_items'])} | "
                     f"{r['nvrtc_compiles']} | {r['duplicate_compiles']} | {r.get('merged_identical_to_n1')} |")
    png = plot(rows, out) if rows else None
    md = [f"# kjit warm --shard i/N: {items} items ({args.variants} variants x {args.archs}), -j {args.jobs} a shard",
          "", f"{info['date']}, {info['host']}: {info['cores']} cores, {info['cpu']}, load {info['load_at_start'][0]:.1f} "
          f"at start; kjit {info.get('kjit')}, NVRTC {info.get('nvrtc')}", "", *table, ""]
    md += [f"![speed-up]({png.name})" if png else "```\n" + text_plot(rows) + "\n```", ""]
    if failures:
        md += ["Checks that failed:", "", *[f"- {f}" for f in failures], ""]
    (out / "results.md").write_text("\n".join(md))
    (out / "results.json").write_text(json.dumps({"machine": info, "items": items, "variants": args.variants,
                                                  "archs": args.archs, "jobs": args.jobs, "rows": rows,
                                                  "failures": failures}, indent=2) + "\n")
    (out / "machine.txt").write_text("\n".join(f"{k}: {v}" for k, v in info.items()) + "\n")
    print("\n".join(table))
    if not png:
        print(text_plot(rows))
    print(f"wrote {out}/results.md, results.json, machine.txt{', ' + png.name if png else ''}")
    for f in failures:
        print(f"bench_shards: check failed: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
