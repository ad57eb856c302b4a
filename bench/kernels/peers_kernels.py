#!/usr/bin/env python3
"""PyTorch and Triton on the lecture kernels' shapes, timed like bench_kernels.

triton.testing.do_bench (warm-up 25 ms, 100 ms of repetitions, L2 flushed, median), on the
same float32 sizes as bench_kernels; GB/s count bytes read + written (mean: read only).
Prints a table and, with --json FILE, writes the results for plot_kernels.py.

    python3 peers_kernels.py [--sizes 4096x1024,4096x4096,4096x16384] [--json peers.json]
"""
import argparse
import datetime
import json

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def square_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # The lecture's Triton square: one program per row.
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float('inf'))
    square_output = row * row
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, square_output, mask=col_offsets < n_cols)


def triton_square(x, y):
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    num_warps = 4 if block < 2048 else (8 if block < 4096 else 16)
    square_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, num_warps=num_warps, BLOCK_SIZE=block)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', default='4096x1024,4096x4096,4096x16384')
    ap.add_argument('--json')
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split('x')) for s in args.sizes.split(',')]
    results = []
    print(f"{'size':12} " + ' '.join(f'{k:>14}' for k in
          ['copy', 'torch.square', 'x*x', 'triton square', 'gelu(tanh)', 'torch.softmax', 'torch.mean']))
    for rows, cols in sizes:
        x = torch.randn(rows, cols, device='cuda', dtype=torch.float32)
        y = torch.empty_like(x)
        ms = {
            'copy': do_bench(lambda: y.copy_(x), return_mode='median'),
            'torch.square': do_bench(lambda: torch.square(x), return_mode='median'),
            'x*x': do_bench(lambda: x * x, return_mode='median'),
            'triton_square_lecture': do_bench(lambda: triton_square(x, y), return_mode='median'),
            'torch_gelu_tanh': do_bench(lambda: F.gelu(x, approximate='tanh'), return_mode='median'),
            'torch.softmax': do_bench(lambda: torch.softmax(x, dim=-1), return_mode='median'),
            'torch.mean': do_bench(lambda: torch.mean(x), return_mode='median'),
        }
        nbytes = x.numel() * x.element_size()
        gbps = {k: (nbytes if k == 'torch.mean' else 2 * nbytes) / (v * 1e-3) / 1e9 for k, v in ms.items()}
        print(f'{rows}x{cols:<7} ' + ' '.join(f'{gbps[k]:14.0f}' for k in
              ['copy', 'torch.square', 'x*x', 'triton_square_lecture', 'torch_gelu_tanh', 'torch.softmax',
               'torch.mean']), flush=True)
        results.append({'rows': rows, 'cols': cols, 'median_ms': ms, 'GBps': gbps})
    if args.json:
        doc = {'date': datetime.date.today().isoformat(), 'gpu': torch.cuda.get_device_name(),
               'torch': torch.__version__, 'triton': triton.__version__,
               'timing': 'triton.testing.do_bench median, L2 flushed', 'results': results}
        with open(args.json, 'w') as f:
            json.dump(doc, f, indent=2)


if __name__ == '__main__':
    main()
