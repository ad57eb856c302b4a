#!/usr/bin/env python3
"""Writes a kernel folder for bench_shards.py: kjit's shipped lecture kernels (kernels_src: square,
GELU, mean, the fused and online softmax) and the lecture's own GELU (tests/data/nvcc_corpus),
copied beside a kjit.json that lists VARIANTS variants of them over their template parameters
and tile sizes: the element type (float, __half, __nv_bfloat16), the block (every multiple of 32
up to 1024), the unroll (1 to 8), the softmax's vector width (16-byte packs or 1) and items per
thread (1 to 8); the lecture GELU over fast math and a register cap. Each variant instantiates
one kernel, as an autotuner's candidate would be compiled. Every compile is real and distinct
(3,944 variants exist; `kjit warm --arch A,B,C` makes variants x archs items).

The order interleaves the kernels (a round robin over them, each walked in an order shuffled with
a fixed seed), so that the first V variants, for any V, are a mix of all of them and of their
parameters: a smaller run is a fair sample, and the same V gives the same manifest every time.

    make_manifest.py OUT [--variants 3334]     # x 3 archs: about 10,000 items
"""

import argparse
import itertools
import json
import pathlib
import random
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TYPES = ["float", "__half", "__nv_bfloat16"]
BLOCKS = list(range(32, 1025, 32))
UNROLLS = list(range(1, 9))


def width(t):
    return 4 if t == "float" else 8  # 16-byte packs


def families():
    """Per kernel file: its variants as (name, manifest entry fields), in a fixed order."""
    out = {}
    for kernel in ("square", "gelu", "mean"):
        out[f"{kernel}.cu"] = [
            (f"{kernel}-{t.strip('_')}-b{b}-u{u}", {"instantiate": [f"kjit::{kernel}<{t}, {b}, {u}>"]})
            for t, b, u in itertools.product(TYPES, BLOCKS, UNROLLS)]
    fused = []
    for t, packed, b, i in itertools.product(TYPES, (True, False), BLOCKS, UNROLLS):
        w = width(t) if packed else 1
        fused.append((f"fused-{t.strip('_')}-w{w}-b{b}-i{i}", {"instantiate": [f"kjit::softmax_fused<{t}, {w}, {b}, {i}>"]}))
    online = [(f"online-{t.strip('_')}-b{b}", {"instantiate": [f"kjit::softmax_online<{t}, {b}>"]})
              for t, b in itertools.product(TYPES, BLOCKS)]
    out["softmax.cu"] = [v for pair in itertools.zip_longest(fused, online) for v in pair if v]
    out["gelu_lecture.cu"] = [(f"lecture-fast{f}-r{r}", {"fast_math": bool(f), "max_registers": r})
                              for f, r in itertools.product((0, 1), (0, 32, 64, 128))]
    for name, variants in out.items():
        random.Random(f"kjit #61 {name}").shuffle(variants)  # a str seed: the same order on every Python
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the folder to write (made; its kjit.json and kernels replaced)")
    p.add_argument("--variants", type=int, default=3334, help="how many variants (default 3334: ~10,000 items at 3 archs)")
    args = p.parse_args(argv)

    fams = families()
    available = sum(len(v) for v in fams.values())
    if not 1 <= args.variants <= available:
        p.error(f"--variants: 1 to {available}")
    # Round robin over the files, so that any prefix mixes them.
    picked = {f: [] for f in fams}
    iters = {f: iter(v) for f, v in fams.items()}
    count = 0
    while count < args.variants:
        for f in fams:
            v = next(iters[f], None)
            if v is not None and count < args.variants:
                picked[f].append(v)
                count += 1

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("square.cu", "gelu.cu", "mean.cu", "softmax.cu", "elementwise.cuh", "lecture_common.cuh"):
        shutil.copyfile(ROOT / "kernels_src" / name, out / name)
    shutil.copyfile(ROOT / "tests" / "data" / "nvcc_corpus" / "gelu_lecture.cu", out / "gelu_lecture.cu")
    kernels = []
    for f, variants in picked.items():
        if variants:
            kernels.append({"file": f, "variants": [dict(name=n, **fields) for n, fields in variants]})
    lines = []
    for k in kernels:
        rows = ",\n    ".join(json.dumps(v) for v in k["variants"])
        lines.append(f'  {{"file": {json.dumps(k["file"])}, "variants": [\n    {rows}]}}')
    (out / "kjit.json").write_text('{"kjit_manifest": 1, "kernels": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{out / 'kjit.json'}: {count} variants of {available} "
          f"({', '.join(f'{f} {len(v)}' for f, v in picked.items())})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
