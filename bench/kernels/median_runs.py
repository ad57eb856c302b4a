#!/usr/bin/env python3
"""Merges several runs of bench_kernels --json (or of peers_kernels.py --json) into one: per size,
the median GB/s and median time of each kernel over the runs; the rest is taken from the first.

    python3 median_runs.py out.json run1.json run2.json run3.json
"""
import json
import statistics
import sys


def main():
    out, runs = sys.argv[1], [json.load(open(p)) for p in sys.argv[2:]]
    merged = dict(runs[0])
    merged['runs'] = len(runs)
    results = []
    for i, first in enumerate(runs[0]['results']):
        row = dict(first)
        for field in ('GBps', 'median_ms'):
            row[field] = {k: statistics.median(r['results'][i][field][k] for r in runs) for k in first[field]}
        if 'ratio' in first:
            g = row['GBps']
            row['ratio'] = {'square_vs_copy': g['square'] / g['copy'], 'gelu_vs_copy': g['gelu'] / g['copy'],
                            'softmax_vs_copy': g['softmax'] / g['copy'], 'mean_vs_read': g['mean'] / g['read']}
        results.append(row)
    merged['results'] = results
    with open(out, 'w') as f:
        json.dump(merged, f, indent=2)


if __name__ == '__main__':
    main()
