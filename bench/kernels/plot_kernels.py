#!/usr/bin/env python3
"""Plots GB/s against size for kjit's lecture kernels and their peers, like Triton's perf_report.

    python3 plot_kernels.py kjit.json peers.json out.png

kjit.json comes from `bench_kernels --json`, peers.json from `peers_kernels.py --json`.
"""
import json
import sys

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [
    ('square', [('kjit', 'square'), ('kjit', 'copy'), ('kjit', 'square_naive_16x16'), ('peers', 'torch.square'),
                ('peers', 'x*x'), ('peers', 'triton_square_lecture')]),
    ('GELU (tanh)', [('kjit', 'gelu'), ('kjit', 'copy'), ('peers', 'torch_gelu_tanh')]),
    ('softmax (rows)', [('kjit', 'softmax'), ('kjit', 'copy'), ('peers', 'torch.softmax')]),
    ('mean', [('kjit', 'mean'), ('kjit', 'read'), ('peers', 'torch.mean')]),
]


def main():
    kjit_doc, peers_doc = (json.load(open(p)) for p in sys.argv[1:3])
    docs = {'kjit': kjit_doc, 'peers': peers_doc}
    labels = [f"{r['rows']}x{r['cols']}" for r in kjit_doc['results']]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4.2), sharey=True)
    for ax, (title, series) in zip(axes, PANELS):
        for source, name in series:
            rows = {f"{r['rows']}x{r['cols']}": r for r in docs[source]['results']}
            ys = [rows[label]['GBps'].get(name) if label in rows else None for label in labels]
            if all(y is None for y in ys):
                continue
            style = '-' if source == 'kjit' and name not in ('copy', 'read') else '--'
            ax.plot(labels, ys, style, marker='o', label=('kjit ' if source == 'kjit' else '') + name)
        ax.set_title(title)
        ax.set_xlabel('float32 size (rows x cols)')
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel('GB/s (read + written; mean: read)')
    fig.suptitle(f"kjit lecture kernels vs PyTorch {peers_doc.get('torch', '')} and Triton "
                 f"{peers_doc.get('triton', '')} on {kjit_doc['gpu']}, {kjit_doc['date']}")
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == '__main__':
    main()
