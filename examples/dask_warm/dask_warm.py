#!/usr/bin/env python3
"""Warm kjit's cache for many kernels on a Dask cluster: one task per shard, each running
kjit.warm(..., shard=(i, n)), so that every kernel x variant x arch is compiled once, by one task.

The tasks share what they compile through the fleet's remote cache (--remote, or
KJIT_REMOTE_CACHE on the workers): a node that later asks for any of these kernels finds it
there. With --bundle-dir (a folder every worker and this client can reach) each task also writes
its shard's entries into a bundle, and --merged makes one bundle of them, for an image or
`kjit cache import`. A task that Dask runs again (a worker lost) compiles only what is missing.

    # on a cluster: workers that see the kernel folder at the same path
    python3 dask_warm.py --scheduler tcp://scheduler:8786 --shards 64 --arch sm_90 \\
        --remote redis://cache:6379 kernels/
    # here, on a LocalCluster of 4 worker processes
    python3 dask_warm.py --local-workers 4 --shards 16 --arch sm_80,sm_90 \\
        --bundle-dir /tmp/shards --merged warm.kjb kernels/

Prints a line per shard and the totals, or one JSON document with --json; exits 1 when a kernel
failed to compile (its error is printed), 2 for a wrong command line.
"""

import argparse
import json
import os
import socket
import sys


def warm_shard(index, count, sources, archs, jobs, remote, cache_root, bundle_dir):
    """One Dask task: shard `index` of `count`, on whichever worker runs it."""
    import kjit

    config = {}
    if remote:
        config["remote_cache"] = remote
    if cache_root:  # a cache folder per task (default: the worker's own, KJIT_CACHE_DIR or ~/.cache/kjit)
        config["cache_dir"] = os.path.join(cache_root, f"shard-{index}")
    bundle = os.path.join(bundle_dir, f"shard-{index}-of-{count}.kjb") if bundle_dir else None
    r = kjit.warm(sources, arch=archs, jobs=jobs, shard=(index, count), bundle=bundle, **config)
    return {
        "shard": index,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "items": len(r["items"]),
        "compiled": r["compiled"],
        "cached": r["cached"],
        "failed": r["failed"],
        "keys": [i["key"] for i in r["items"] if i["key"]],
        "errors": [f"{i['file']} [{i['variant'] or '-'}] {i['arch']}: {i['error']}" for i in r["items"] if i["error"]],
        "wall_ms": r["wall_ms"],
        "bundle": r["bundle"]["file"] if r["bundle"] else None,
        "ok": r["ok"],
    }


def main(argv=None):
    p = argparse.ArgumentParser(description="Warm kjit's cache on a Dask cluster, one task per shard.")
    p.add_argument("sources", nargs="+", help="folders holding a kjit.json, or kjit.json files (same path on every worker)")
    p.add_argument("--arch", required=True, help="comma-separated archs: sm_80,sm_90")
    p.add_argument("--shards", type=int, default=0, help="how many tasks (default: 4 per worker thread)")
    p.add_argument("--jobs", type=int, default=1, help="NVRTC compiles at once in each task (default 1)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="the Dask scheduler's address (tcp://host:8786)")
    where.add_argument("--local-workers", type=int, default=2, help="else: a LocalCluster of this many processes")
    p.add_argument("--remote", help="the fleet's remote cache for every task (else the workers' KJIT_REMOTE_CACHE)")
    p.add_argument("--cache-root", help="each task's cache folder is CACHE_ROOT/shard-I (default: the worker's own)")
    p.add_argument("--bundle-dir", help="each task writes its entries into BUNDLE_DIR/shard-I-of-N.kjb")
    p.add_argument("--merged", help="then merge the tasks' bundles into this one (needs --bundle-dir)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    args = p.parse_args(argv)
    if args.merged and not args.bundle_dir:
        p.error("--merged needs --bundle-dir")

    import kjit
    from dask.distributed import Client, LocalCluster

    archs = [a for a in args.arch.split(",") if a]
    sources = [os.path.abspath(s) for s in args.sources]
    if args.bundle_dir:
        os.makedirs(args.bundle_dir, exist_ok=True)
    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.local_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        threads = sum(client.nthreads().values())
        count = args.shards or 4 * max(1, threads)
        futures = [client.submit(warm_shard, i, count, sources, archs, args.jobs, args.remote, args.cache_root,
                                 args.bundle_dir, key=f"kjit-warm-shard-{i}-of-{count}", pure=False)
                   for i in range(count)]
        results = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    merged = None
    if args.merged:
        merged = kjit.merge_bundles([r["bundle"] for r in results], args.merged)
    totals = {k: sum(r[k] for r in results) for k in ("items", "compiled", "cached", "failed")}
    ok = all(r["ok"] for r in results)
    if args.json:
        print(json.dumps({"shards": results, "totals": totals, "merged": merged, "ok": ok}, indent=2))
    else:
        for r in results:
            print(f"shard {r['shard']}/{count} on {r['worker']}: {r['items']} items, {r['compiled']} compiled, "
                  f"{r['cached']} cached, {r['failed']} failed in {r['wall_ms'] / 1000:.1f} s")
        print(f"total: {totals['items']} items: {totals['compiled']} compiled, {totals['cached']} cached, "
              f"{totals['failed']} failed, on {count} shards")
        if merged:
            print(f"merged {len(results)} bundles into {args.merged}: {merged['bundle']['entries']} entries "
                  f"({merged['bundle']['signature']})")
    for r in results:
        for e in r["errors"]:
            print(f"dask_warm: error: shard {r['shard']}: {e}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
