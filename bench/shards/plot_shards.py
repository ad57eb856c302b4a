#!/usr/bin/env python3
"""The scaling figure of bench_shards.py from its results.json: speed-up against N (with the ideal N
and the issue's 0.85 N target) and compiles per second against N, written as SVG (text, checked
in beside the numbers) and PNG. Needs matplotlib (Debian: python3-matplotlib); bench_shards.py
calls it when matplotlib is there, and a machine without it (the GPU machine) leaves the plot to
this script, run where it is:

    bench/shards/plot_shards.py bench/results/DATE-h200-shards/results.json    # writes shards.svg, shards.png there
"""

import argparse
import json
import pathlib
import sys


def plot(results, out_dir):
    """Writes shards.svg and shards.png into out_dir from a results.json's content; the SVG's path, or
    None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = sorted(results["rows"], key=lambda r: r["n"])
    ns = [r["n"] for r in rows]
    m = results.get("machine", {})
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(ns, [r["speedup"] for r in rows], "o-", label="measured (wall time)")
    a.plot(ns, ns, "--", color="grey", label="ideal (N)")
    a.plot(ns, [0.85 * n for n in ns], ":", color="grey", label="0.85 N (target)")
    for r in rows:
        a.annotate(f"{r['speedup']:.2f}", (r["n"], r["speedup"]), textcoords="offset points", xytext=(4, -10),
                   fontsize=8)
    a.set_xlabel("shard processes N")
    a.set_ylabel("speed-up against N = 1")
    a.legend(fontsize=8)
    b.plot(ns, [r["compiles_per_s"] for r in rows], "o-")
    b.set_xlabel("shard processes N")
    b.set_ylabel("compiles per second")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"kjit warm --shard i/N: {results['items']} items ({results.get('variants')} variants x "
                 f"{results.get('archs')}), {m.get('cores')} cores, {str(m.get('date', ''))[:10]}", fontsize=10)
    fig.tight_layout()
    out_dir = pathlib.Path(out_dir)
    svg = out_dir / "shards.svg"
    fig.savefig(svg, metadata={"Date": None})  # no timestamp: the same numbers give the same file
    fig.savefig(out_dir / "shards.png", dpi=120)
    plt.close(fig)
    return svg


def main(argv=None):
    p = argparse.ArgumentParser(description="bench_shards.py's results.json as shards.svg and shards.png")
    p.add_argument("results", help="a results.json written by bench_shards.py")
    p.add_argument("-o", "--out", help="the folder to write into (default: the results.json's)")
    args = p.parse_args(argv)
    path = pathlib.Path(args.results)
    svg = plot(json.loads(path.read_text()), args.out or path.parent)
    if svg is None:
        print("plot_shards: matplotlib is not installed (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    print(f"wrote {svg} and {svg.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
