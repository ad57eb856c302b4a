#!/usr/bin/env python3
"""kjit against the run-time compilers users pick instead, on the lecture's square kernel.

Peers: kjit (load_inline, through bench_peers_kjit), CuPy RawKernel, torch.cuda._compile_kernel,
Triton and PyTorch's load_inline. Every process is fresh and measures after its framework
import and CUDA init:

  cold      empty cache: first request + first launch + sync (compile, store, load)
  warm      a new process on the cache the cold process filled
  hot       the same request again in the same process, + launch + sync
  launch    LAUNCHES enqueues of a 16x16 launch, then one sync, per launch
  start to first result (cold, warm)
            from the process's start (the orchestrator's CLOCK_MONOTONIC just before it started
            the process, PEERS_SPAWN_NS) to the first call's result copied to the host, on the
            process's own clock: interpreter, import or init, compile or hit, load, launch, sync

Each result is checked against the square of random inputs (never zero); a wrong result makes
the peer's row an error row. Medians over rounds (cold: --rounds, warm: --warm-rounds; hot and
launch over every process of the peer), ratios to kjit from the same run. Rounds are interleaved:
each round runs every peer's cold process, then its warm one, before the next round.

    python3 bench/peers/peers.py --kjit build/bench/bench_peers_kjit --out DIR
        [--rounds 11] [--warm-rounds 7] [--launches 20000] [--only kjit,cupy,...]

Writes DIR/peers.json, DIR/peers.md and DIR/peers.png (when matplotlib is there); progress on
stderr.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

# The lecture's kernel, as /work/shared/peers/peers.py gives it to every peer.
SQUARE_CUDA = r'''
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
'''
EXTERN_C_SQUARE = 'extern "C" ' + SQUARE_CUDA.strip()

LOAD_INLINE_CUDA = SQUARE_CUDA + r'''
torch::Tensor square_matrix(torch::Tensor matrix) {
    const auto height = matrix.size(0);
    const auto width = matrix.size(1);
    auto result = torch::empty_like(matrix);
    dim3 threads_per_block(16, 16);
    dim3 number_of_blocks((width + threads_per_block.x - 1) / threads_per_block.x,
                          (height + threads_per_block.y - 1) / threads_per_block.y);
    square_matrix_kernel<<<number_of_blocks, threads_per_block>>>(
        matrix.data_ptr<float>(), result.data_ptr<float>(), width, height);
    return result;
}'''
LOAD_INLINE_CPP = 'torch::Tensor square_matrix(torch::Tensor matrix);'

PEERS = ['kjit', 'kjit_python', 'kjit_python_cupy', 'cupy', 'compile_kernel', 'triton', 'load_inline']
LABELS = {
    'kjit': 'kjit load_inline',
    'kjit_python': 'kjit (Python)',
    'kjit_python_cupy': 'kjit (Python) on CuPy arrays',
    'cupy': 'CuPy RawKernel',
    'compile_kernel': 'torch.cuda._compile_kernel',
    'triton': 'Triton',
    'load_inline': 'PyTorch load_inline',
}
SHORT = {'kjit': 'kjit', 'kjit_python': 'kjit\n(Python)', 'kjit_python_cupy': 'kjit (Py)\nCuPy arrays', 'cupy': 'CuPy\nRawKernel', 'compile_kernel': 'torch.cuda.\n_compile_kernel',
         'triton': 'Triton', 'load_inline': 'PyTorch\nload_inline'}
# What each peer needs installed (checked without importing it).
NEEDS = {'kjit': [], 'kjit_python': ['torch'], 'kjit_python_cupy': ['cupy'], 'cupy': ['cupy'], 'compile_kernel': ['torch'], 'triton': ['torch', 'triton'],
         'load_inline': ['torch']}
# The shape checked on the first and the hot call (4x3 blocks of 16x16, not square: a swapped
# width and height shows) and the launch loop's shape (one block, as peers.py).
H, W = 37, 53
LOOP = 16  # the launch loops write 16 out, as peers.py does
WARMUP = 100


# ----------------------------------------------------------------------------------------------
# Child side: one peer, one process, one JSON line on stdout.

def random_inputs(n, seed):
    """+-[0.5, 2): never zero, so an output left at zero shows."""
    rng = random.Random(seed)
    return [(-1.0 if rng.random() < 0.5 else 1.0) * rng.uniform(0.5, 2.0) for _ in range(n)]


def check(what, inputs, got):
    """'ok', or what is wrong with the first bad element. inputs: the float32 values as read back."""
    if len(got) != len(inputs):
        return f'{what}: {len(got)} elements, expected {len(inputs)}'
    for i, (x, g) in enumerate(zip(inputs, got)):
        want = x * x  # exact in double; the GPU's float32 product is within 2^-24 of it
        if not abs(g - want) <= 1e-6 * want:
            return f'{what}: element {i} is {g}, expected {want} (input {x})'
    return 'ok'


def flat(t):
    return [v for row in t.tolist() for v in row]


def first_result(out):
    """Records first_result_s: from PEERS_SPAWN_NS (the orchestrator's time.monotonic_ns() just before it
    started this process) to now, on the same clock."""
    spawn = os.environ.get('PEERS_SPAWN_NS')
    if spawn:
        out['first_result_s'] = (time.monotonic_ns() - int(spawn)) / 1e9


class Phases:
    """Collects load_s / hot_s / call_us, the first failed check and per-phase exceptions."""

    def __init__(self, out):
        self.out = out
        out['check'] = 'ok'

    def keep(self, c):
        if self.out['check'] == 'ok' and c != 'ok':
            self.out['check'] = c

    def error(self, phase, e):
        self.out[f'{phase}_error'] = f'{type(e).__name__}: {e}'[:600]
        sys.stderr.write(traceback.format_exc())


def run_peer(kind, mode, cache, launches):
    out = {'peer': kind, 'mode': mode}
    if kind in ('cupy', 'kjit_python_cupy'):
        return child_cupy(out, cache, launches, kjit_python=kind == 'kjit_python_cupy')
    if kind == 'kjit_python':  # `import kjit` alone, before torch: what a script pays for it
        t = time.perf_counter()
        try:
            import kjit
        except ImportError as e:
            return {**out, 'missing': f'kjit (PYTHONPATH from --kjit-python): {e}'}
        out['import_kjit_ms'] = (time.perf_counter() - t) * 1e3
    try:
        import torch
    except ImportError as e:
        return {**out, 'missing': f'torch: {e}'}
    out['versions'] = {'torch': torch.__version__, 'torch_cuda': torch.version.cuda}
    torch.zeros(1, device='cuda')
    torch.cuda.synchronize()
    out['device'] = torch.cuda.get_device_name()

    def matrix(h, w, seed):
        x = torch.tensor(random_inputs(h * w, seed), dtype=torch.float32).reshape(h, w).cuda()
        return x, flat(x.cpu())

    x1, h1 = matrix(H, W, 1)
    x2, h2 = matrix(H, W, 2)
    x3, h3 = matrix(LOOP, LOOP, 3)
    r1, r2, r3 = (torch.full_like(x, float('nan')) for x in (x1, x2, x3))
    torch.cuda.synchronize()
    sync = torch.cuda.synchronize
    p = Phases(out)

    if kind == 'load_inline':
        from torch.utils.cpp_extension import load_inline

        def request():
            return load_inline(name='square_matrix_extension', cpp_sources=LOAD_INLINE_CPP,
                               cuda_sources=LOAD_INLINE_CUDA, functions=['square_matrix'], with_cuda=True,
                               extra_cuda_cflags=['-O2'], build_directory=cache)

        ext = [None]

        def first(x, r):  # the extension allocates its result
            ext[0] = request()
            return ext[0].square_matrix(x)

        def loop(n):  # each loop as peers.py writes it: nothing but the call
            f, y = ext[0].square_matrix, None
            for _ in range(n):
                y = f(x3)
            return y
    elif kind == 'kjit_python':
        out['versions']['kjit'] = kjit.__version__
        kernel = [None]

        def first(x, r):  # the request: load_inline with torch's argument names, then the kernel
            mod = kjit.load_inline(name='square', cuda_sources=EXTERN_C_SQUARE, functions=['square_matrix_kernel'],
                                   extra_cuda_cflags=['-O2'], build_directory=cache)
            out.setdefault('outcome', mod.outcome)
            kernel[0] = mod.square_matrix_kernel
            h, w = x.shape
            kernel[0][((w + 15) // 16, (h + 15) // 16), (16, 16)](x, r, w, h)
            return r

        def hot_request_us(rounds=200):
            """The hot request alone (registry hit to a launchable kernel), no launch: median us."""
            times = []
            for _ in range(rounds):
                t = time.perf_counter()
                kjit.load_inline(name='square', cuda_sources=EXTERN_C_SQUARE, functions=['square_matrix_kernel'],
                                 extra_cuda_cflags=['-O2'], build_directory=cache).square_matrix_kernel
                times.append((time.perf_counter() - t) * 1e6)
            return statistics.median(times)

        def loop(n):  # as a user writes it: k[grid, block](tensor, tensor, int, int) each time
            k = kernel[0]
            for _ in range(n):
                k[(1, 1), (16, 16)](x3, r3, 16, 16)
            return r3
    elif kind == 'compile_kernel':
        compile_kernel = getattr(torch.cuda, '_compile_kernel', None)
        if compile_kernel is None:
            return {**out, 'missing': f'torch {torch.__version__} has no torch.cuda._compile_kernel'}
        kernel = [None]

        def launch(k, x, r):
            h, w = x.shape
            k(grid=((w + 15) // 16, (h + 15) // 16, 1), block=(16, 16, 1), args=[x, r, w, h])
            return r

        def first(x, r):
            kernel[0] = compile_kernel(EXTERN_C_SQUARE, 'square_matrix_kernel')
            return launch(kernel[0], x, r)

        def loop(n):
            k = kernel[0]
            for _ in range(n):
                k(grid=(1, 1, 1), block=(16, 16, 1), args=[x3, r3, 16, 16])
            return r3
    elif kind == 'triton':
        try:
            import triton
            import triton.language as tl
        except ImportError as e:
            return {**out, 'missing': f'triton: {e}'}
        out['versions']['triton'] = triton.__version__

        @triton.jit
        def square_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                          BLOCK_SIZE: tl.constexpr):
            # The lecture's Triton square: one program per row.
            row_idx = tl.program_id(0)
            col_offsets = tl.arange(0, BLOCK_SIZE)
            row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=col_offsets < n_cols,
                          other=-float('inf'))
            tl.store(output_ptr + row_idx * output_row_stride + col_offsets, row * row, mask=col_offsets < n_cols)

        def first(x, r):
            h, w = x.shape
            square_kernel[(h,)](r, x, x.stride(0), r.stride(0), w, BLOCK_SIZE=triton.next_power_of_2(w),
                                num_warps=4)
            return r

        def loop(n):  # the call is the request: Triton's in-process cache
            for _ in range(n):
                square_kernel[(16,)](r3, x3, 16, 16, 16, BLOCK_SIZE=16, num_warps=4)
            return r3
    else:
        raise SystemExit(f'unknown peer {kind}')

    try:
        t = time.perf_counter()
        y = first(x1, r1)
        sync()
        out['load_s'] = time.perf_counter() - t
        host = y.cpu()  # the first result on the host
        first_result(out)
        p.keep(check('first call', h1, flat(host)))
    except Exception as e:
        p.error('load', e)
        return out
    try:
        t = time.perf_counter()
        y = first(x2, r2)
        sync()
        out['hot_s'] = time.perf_counter() - t
        p.keep(check('hot call', h2, flat(y.cpu())))
    except Exception as e:
        p.error('hot', e)
    if kind == 'kjit_python' and 'load_error' not in out:
        out['hot_request_us'] = hot_request_us()
    try:
        loop(WARMUP)
        r3.fill_(float('nan'))  # the check below sees what the timed launches wrote
        sync()
        t = time.perf_counter()
        y = loop(launches)
        sync()
        out['call_us'] = (time.perf_counter() - t) / launches * 1e6
        p.keep(check('launch loop', h3, flat(y.cpu())))
    except Exception as e:
        p.error('call', e)
    return out


def child_cupy(out, cache, launches, kjit_python=False):
    """CuPy's RawKernel, or (kjit_python) kjit's Python package on the same CuPy arrays, synchronized
    the same way: the libraries compared without a tensor framework between them."""
    if kjit_python:
        t = time.perf_counter()
        try:
            import kjit
        except ImportError as e:
            return {**out, 'missing': f'kjit (PYTHONPATH from --kjit-python): {e}'}
        out['import_kjit_ms'] = (time.perf_counter() - t) * 1e3
    try:
        import cupy as cp
        import numpy as np
    except ImportError as e:
        return {**out, 'missing': f'cupy: {e}'}
    out['versions'] = {'cupy': cp.__version__, 'cuda_runtime': cp.cuda.runtime.runtimeGetVersion()}
    dev = cp.cuda.Device(0)
    dev.use()
    cp.zeros(1, dtype=cp.float32)
    dev.synchronize()
    out['device'] = cp.cuda.runtime.getDeviceProperties(0)['name'].decode()

    def matrix(h, w, seed):
        x = cp.asarray(np.array(random_inputs(h * w, seed), dtype=np.float32).reshape(h, w))
        r = cp.full_like(x, np.nan)
        return x, flat(cp.asnumpy(x)), r

    x1, h1, r1 = matrix(H, W, 1)
    x2, h2, r2 = matrix(H, W, 2)
    x3, h3, r3 = matrix(LOOP, LOOP, 3)
    dev.synchronize()
    p = Phases(out)

    if kjit_python:
        out['versions']['kjit'] = kjit.__version__

        def request():
            mod = kjit.load_inline(name='square', cuda_sources=EXTERN_C_SQUARE, functions=['square_matrix_kernel'],
                                   extra_cuda_cflags=['-O2'], build_directory=cache)
            out.setdefault('outcome', mod.outcome)
            return mod.square_matrix_kernel

        def launch(k, x, r):
            h, w = x.shape
            k[((w + 15) // 16, (h + 15) // 16), (16, 16)](x, r, w, h)

        def call(k, grid, block, args):
            k[grid, block](*args)
    else:
        def request():
            return cp.RawKernel(EXTERN_C_SQUARE, 'square_matrix_kernel')

        def launch(k, x, r):
            h, w = x.shape
            k(((w + 15) // 16, (h + 15) // 16), (16, 16), (x, r, cp.int32(w), cp.int32(h)))

        def call(k, grid, block, args):
            k(grid, block, args)

    try:
        t = time.perf_counter()
        k = request()
        launch(k, x1, r1)
        dev.synchronize()
        out['load_s'] = time.perf_counter() - t
        host = cp.asnumpy(r1)  # the first result on the host
        first_result(out)
        p.keep(check('first call', h1, flat(host)))
    except Exception as e:
        p.error('load', e)
        return out
    try:
        t = time.perf_counter()
        k2 = request()
        launch(k2, x2, r2)
        dev.synchronize()
        out['hot_s'] = time.perf_counter() - t
        p.keep(check('hot call', h2, flat(cp.asnumpy(r2))))
    except Exception as e:
        p.error('hot', e)
    try:
        args = (x3, r3, LOOP, LOOP) if kjit_python else (x3, r3, cp.int32(LOOP), cp.int32(LOOP))
        for _ in range(WARMUP):
            call(k, (1, 1), (16, 16), args)
        r3.fill(np.nan)  # the check below sees what the timed launches wrote
        dev.synchronize()
        if kjit_python:  # as a user writes it: k[grid, block](array, array, int, int) each time
            t = time.perf_counter()
            for _ in range(launches):
                k[(1, 1), (16, 16)](x3, r3, LOOP, LOOP)
        else:
            t = time.perf_counter()
            for _ in range(launches):
                k((1, 1), (16, 16), args)
        dev.synchronize()
        out['call_us'] = (time.perf_counter() - t) / launches * 1e6
        p.keep(check('launch loop', h3, flat(cp.asnumpy(r3))))
    except Exception as e:
        p.error('call', e)
    return out


def child_main(kind, mode, cache, launches):
    try:
        out = run_peer(kind, mode, cache, launches)
    except Exception as e:  # CUDA init or an import that fails other than by being absent
        traceback.print_exc()
        out = {'peer': kind, 'mode': mode, 'error': f'{type(e).__name__}: {e}'[:600]}
    print(json.dumps(out), flush=True)
    return 0


# ----------------------------------------------------------------------------------------------
# Orchestrator side.

START = time.perf_counter()


def log(msg):
    sys.stderr.write(f'[{time.perf_counter() - START:7.1f} s] {msg}\n')
    sys.stderr.flush()


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith('{'):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def run_process(kind, mode, root, args):
    """One fresh process of one peer on the cache under `root`; its JSON, with process_s."""
    cache = os.path.join(root, 'cache')
    os.makedirs(cache, exist_ok=True)
    env = dict(os.environ)
    env['PYTHONUNBUFFERED'] = '1'
    # The driver's own JIT cache (PTX -> SASS) lives with the peer's cache: cold is cold for
    # a peer that loads PTX, warm gets what the cold process left.
    env['CUDA_CACHE_PATH'] = os.path.join(root, 'nv')
    env['TRITON_CACHE_DIR'] = cache
    env['CUPY_CACHE_DIR'] = cache
    if kind in ('kjit', 'kjit_python', 'kjit_python_cupy'):
        for k in [k for k in env if k.startswith('KJIT_') and k != 'KJIT_LOG']:
            del env[k]  # no KJIT_CACHE_DISABLE / KJIT_ALWAYS_COMPILE: the build dir decides
    if kind in ('kjit_python', 'kjit_python_cupy'):
        env['PYTHONPATH'] = os.pathsep.join(p for p in (args.kjit_python, env.get('PYTHONPATH')) if p)
    if kind == 'kjit':
        cmd = [args.kjit, mode, cache, str(args.launches)]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), '--child', kind, mode, cache, str(args.launches)]
    t = time.perf_counter()
    env['PEERS_SPAWN_NS'] = str(time.monotonic_ns())  # the child's start to its first result: first_result_s
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors='replace') if isinstance(e.stderr, bytes) else (e.stderr or '')
        return {'peer': kind, 'mode': mode, 'error': f'timed out after {args.timeout:.0f} s',
                'stderr': err[-1500:], 'process_s': time.perf_counter() - t}
    except OSError as e:
        return {'peer': kind, 'mode': mode, 'error': f'cannot run {cmd[0]}: {e}', 'process_s': 0.0}
    wall = time.perf_counter() - t
    d = last_json_line(p.stdout)
    if d is None:
        d = {'peer': kind, 'mode': mode, 'error': f'exit {p.returncode}, no JSON on stdout: {p.stderr.strip()[-600:]}'}
    elif p.returncode != 0 and 'error' not in d and 'missing' not in d:
        d['error'] = f'exit {p.returncode}: {p.stderr.strip()[-600:]}'
    if p.stderr.strip() and ('error' in d or any(k.endswith('_error') for k in d)):
        d['stderr'] = p.stderr[-1500:]
    d['process_s'] = wall
    return d


def missing_packages(kind):
    return [m for m in NEEDS[kind] if importlib.util.find_spec(m) is None]


def import_times(args, rounds=7):
    """`import kjit` in fresh processes without torch (ms, medians of the import alone)."""
    env = dict(os.environ)
    if args.kjit_python:
        env['PYTHONPATH'] = os.pathsep.join(p for p in (args.kjit_python, env.get('PYTHONPATH')) if p)
    code = 'import time; t = time.perf_counter(); import kjit; print((time.perf_counter() - t) * 1e3)'
    times = []
    for _ in range(rounds):
        p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            return {'error': p.stderr.strip()[-400:]}
        times.append(float(p.stdout.strip()))
    return {'median_ms': statistics.median(times), 'samples_ms': times}


def describe(d):
    if 'missing' in d:
        return f"missing ({d['missing']})"
    if 'error' in d:
        return f"ERROR {d['error'].splitlines()[0][:160]}"
    parts = []
    for key, fmt in (('load_s', 'load {}'), ('hot_s', 'hot {}')):
        if key in d:
            parts.append(fmt.format(fmt_s(d[key])))
    if 'call_us' in d:
        parts.append(f"{d['call_us']:.2f} us/launch")
    if d.get('outcome'):
        parts.append(d['outcome'])
    parts.append('check ' + d.get('check', '?'))
    parts += [f'{k}: {v}' for k, v in d.items() if k.endswith('_error')]
    return ', '.join(parts)


def fmt_s(s):
    if s >= 1:
        return f'{s:.2f} s'
    if s >= 1e-3:
        return f'{s * 1e3:.1f} ms' if s >= 0.01 else f'{s * 1e3:.2f} ms'
    return f'{s * 1e6:.0f} us'


PHASES = [  # (name, processes it is taken from, field, the field naming its exception, unit)
    ('cold', 'cold', 'load_s', 'load_error', 's'),
    ('warm', 'warm', 'load_s', 'load_error', 's'),
    ('hot', 'all', 'hot_s', 'hot_error', 's'),
    ('launch', 'all', 'call_us', 'call_error', 'us'),
    ('warm_process', 'warm', 'process_s', None, 's'),
    ('first_cold', 'cold', 'first_result_s', None, 's'),
    ('first_warm', 'warm', 'first_result_s', None, 's'),
]


def summarize(kind, samples):
    """status ok | missing | error, the medians per phase and per-phase errors."""
    procs = samples['cold'] + samples['warm']
    s = {'label': LABELS[kind], 'samples': samples,
         'rounds': {m: sum('missing' not in d for d in samples[m]) for m in ('cold', 'warm')}}
    if any('missing' in d for d in procs) or not procs:
        s['status'] = 'missing'
        s['reason'] = next((d['missing'] for d in procs if 'missing' in d), 'not run')
        return s
    bad = [d for d in procs if 'error' in d or 'load_error' in d or d.get('check', 'ok') != 'ok']
    if bad:
        d = bad[0]
        s['status'] = 'error'
        if d.get('check', 'ok') != 'ok':
            s['reason'] = f"wrong result ({d['mode']} process): {d['check']}"
        else:
            s['reason'] = f"{d['mode']} process: {d.get('error') or d.get('load_error')}"
        return s
    s['status'] = 'ok'
    s['median'], s['phase_errors'] = {}, {}
    for name, source, field, error_field, _ in PHASES:
        pool = procs if source == 'all' else samples[source]
        errs = [d[error_field] for d in pool if error_field in d]
        vals = [d[field] for d in pool if field in d]
        if errs:
            s['phase_errors'][name] = errs[0]
        elif vals:
            s['median'][name] = statistics.median(vals)
    return s


def machine_info(results):
    info = {'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
            'host': platform.node(), 'python': platform.python_version(), 'cpus': os.cpu_count()}
    try:
        q = subprocess.run(['nvidia-smi', '--query-gpu=name,driver_version', '--format=csv,noheader'],
                           capture_output=True, text=True, timeout=30)
        if q.returncode == 0 and q.stdout.strip():
            name, driver = [v.strip() for v in q.stdout.strip().splitlines()[0].split(',', 1)]
            info['gpu'], info['driver'] = name, driver
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    versions = {}
    for kind, s in results.items():
        for d in s['samples']['cold'] + s['samples']['warm']:
            if 'device' in d:
                info.setdefault('gpu', d['device'])
            if kind == 'kjit':
                if 'version' in d:
                    versions['kjit'] = d['version']
                if 'nvrtc' in d:
                    versions['kjit_nvrtc'] = d['nvrtc']
            for k, v in (d.get('versions') or {}).items():
                versions[k] = v
    for pkg in ('torch', 'triton', 'cupy'):
        if pkg not in versions:
            try:
                import importlib.metadata as md
                names = [pkg] + ([f'cupy-cuda{v}' for v in ('13x', '12x', '11x')] if pkg == 'cupy' else [])
                for n in names:
                    try:
                        versions[pkg] = md.version(n)
                        break
                    except md.PackageNotFoundError:
                        continue
            except ImportError:
                pass
    info['versions'] = versions
    return info


def ratios(results):
    k = results.get('kjit', {})
    base = k.get('median', {}) if k.get('status') == 'ok' else {}
    for s in results.values():
        if s.get('status') == 'ok':
            s['ratio_to_kjit'] = {p: v / base[p] for p, v in s['median'].items() if base.get(p)}


def fmt_ratio(r):
    if r >= 100:
        return f'{r:.0f}x'
    if r >= 10:
        return f'{r:.1f}x'
    if r >= 0.1:
        return f'{r:.2f}x'
    return f'{r:.2g}x'


def cell(s, phase, unit):
    if phase in s.get('phase_errors', {}):
        return f"error: {s['phase_errors'][phase].splitlines()[0][:80]}"
    v = s.get('median', {}).get(phase)
    if v is None:
        return '-'
    text = fmt_s(v) if unit == 's' else f'{v:.2f} us'
    r = s.get('ratio_to_kjit', {}).get(phase)
    return text + (f' ({fmt_ratio(r)})' if r is not None else '')


def markdown(doc):
    m, cfg = doc['machine'], doc['config']
    v = m['versions']
    ver = ', '.join(f'{k} {v[k]}' for k in ('kjit', 'kjit_nvrtc', 'torch', 'torch_cuda', 'triton', 'cupy', 'cuda_runtime')
                    if k in v)
    lines = [
        f"# kjit and its peers on the lecture's square kernel",
        '',
        f"{m.get('gpu', 'unknown GPU')}, driver {m.get('driver', '?')}, {m.get('cpus')} CPUs, {m['date']}; "
        + (f"{ver}; " if ver else '') + f"Python {m['python']}.",
        f"Rounds: cold {cfg['rounds']}, warm {cfg['warm_rounds']} (fresh process each); hot and per launch over "
        f"every process; per launch = {cfg['launches']} enqueues + one sync. Medians; (Nx) = time / kjit's time "
        f"in this run (above 1: slower than kjit).",
        '',
        '| peer | cold (empty cache) | warm (new process, cache on disk) | hot (same process) | per launch '
        '| warm process wall (import + init + all) | start to first result, cold | start to first result, warm |',
        '|---|---|---|---|---|---|---|---|',
    ]
    for kind, s in doc['peers'].items():
        label = s['label']
        if s['status'] == 'missing':
            lines.append(f"| {label} | not installed: {s['reason'][:100]} | | | | | | |")
        elif s['status'] == 'error':
            lines.append(f"| {label} | ERROR: {s['reason'].splitlines()[0][:200].replace('|', '/')} | | | | | | |")
        else:
            cells = [cell(s, p, u).replace('|', '/') for p, _, _, _, u in PHASES]
            lines.append(f"| {label} | " + ' | '.join(cells) + ' |')
    ran = [s for s in doc['peers'].values() if s['status'] != 'missing']
    if ran:
        lines += ['', 'Processes run: ' + ', '.join(
            f"{s['label']} {s['rounds']['cold']} cold + {s['rounds']['warm']} warm" for s in ran) + '.']
    kp = doc['peers'].get('kjit_python', {})
    hot = [d['hot_request_us'] for m in ('cold', 'warm') for d in kp.get('samples', {}).get(m, []) if 'hot_request_us' in d]
    if hot:
        lines.append(f"kjit (Python) hot request alone (load_inline + kernel lookup, registry hit, no launch): "
                     f"{statistics.median(hot):.1f} us (median over processes of 200-call medians).")
    imp = kp.get('import_kjit', {})
    if 'median_ms' in imp:
        lines.append(f"`import kjit` without torch, fresh process: {imp['median_ms']:.1f} ms (median of "
                     f"{len(imp['samples_ms'])}).")
    if doc.get('budget_hit'):
        lines.append(f"Stopped early: the time budget ({cfg['budget_s']:.0f} s) ran out; fewer rounds than asked.")
    return '\n'.join(lines) + '\n'


def plot(doc, path):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f'no plot: {e}'
    panels = [('cold', 'cold: empty cache (ms)', 1e3), ('warm', 'warm: new process, disk cache (ms)', 1e3),
              ('hot', 'hot: same process (ms)', 1e3), ('launch', 'per launch (us)', 1.0)]
    ok = {k: s for k, s in doc['peers'].items() if s['status'] == 'ok'}
    fig, axes = plt.subplots(2, 2, figsize=(10, 8.5))
    colors = {'kjit': '#2a7ab0', 'cupy': '#5aa05a', 'compile_kernel': '#d9822b', 'triton': '#8e63b5',
              'load_inline': '#c44e52'}
    for ax, (phase, title, scale) in zip(axes.flat, panels):
        names, vals, cols = [], [], []
        for k, s in ok.items():
            v = s['median'].get(phase)
            if v is not None:
                names.append(SHORT[k])
                vals.append(v * scale)
                cols.append(colors.get(k, 'grey'))
        if not vals:
            ax.set_title(title)
            ax.text(0.5, 0.5, 'no data', ha='center', transform=ax.transAxes)
            continue
        bars = ax.bar(range(len(vals)), vals, color=cols)
        ax.set_yscale('log')
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(names, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis='y', which='both', alpha=0.3)
        lo, hi = min(vals), max(vals)
        ax.set_ylim(lo / 3, hi * 6)
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v * 1.15, f'{v:.3g}', ha='center', va='bottom', fontsize=8)
    bad = [f"{s['label']}: {s['status']}" for s in doc['peers'].values() if s['status'] != 'ok']
    m = doc['machine']
    fig.suptitle(f"square_matrix_kernel, run-time compilers on {m.get('gpu', '?')} ({m['date'][:10]}); log scale, "
                 f"lower is better" + (f"\nnot shown: {'; '.join(bad)}" if bad else ''), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument('--kjit', help='path to bench_peers_kjit (needed unless --only leaves kjit out)')
    ap.add_argument('--kjit-python', default=None,
                    help='the folder that holds the kjit package (build/python, or a pip --target); default: '
                         'the kjit importable here')
    ap.add_argument('--out', required=True, help='folder for peers.json, peers.md, peers.png')
    ap.add_argument('--rounds', type=int, default=11, help='cold rounds, each a fresh cache (default 11)')
    ap.add_argument('--warm-rounds', type=int, default=7, help='warm processes per peer (default 7)')
    ap.add_argument('--launches', type=int, default=20000, help='launches in the per-launch loop (default 20000)')
    ap.add_argument('--only', default=','.join(PEERS), help=f"comma-separated subset of {','.join(PEERS)}")
    ap.add_argument('--timeout', type=float, default=300, help='seconds one process may run (default 300)')
    ap.add_argument('--budget', type=float, default=360,
                    help='seconds after which no new round starts (default 360; at least one round always runs)')
    ap.add_argument('--tmp', default=None, help='where the caches go (default: the system temp dir)')
    ap.add_argument('--keep', action='store_true', help='keep the caches (their folder is printed)')
    args = ap.parse_args()

    kinds = [k.strip() for k in args.only.split(',') if k.strip()]
    unknown = [k for k in kinds if k not in PEERS]
    if unknown or not kinds:
        ap.error(f"--only: unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEERS)}")
    kinds = [k for k in PEERS if k in kinds]
    if args.rounds < 1 or args.warm_rounds < 1 or args.launches < 1:
        ap.error('--rounds, --warm-rounds and --launches must be at least 1')
    if 'kjit' in kinds:
        if not args.kjit:
            ap.error('--kjit PATH is needed to measure kjit (or leave it out with --only)')
        args.kjit = os.path.abspath(args.kjit)
        if not os.access(args.kjit, os.X_OK):
            ap.error(f'--kjit {args.kjit}: not an executable file (build it: cmake --build build --target '
                     'bench_peers_kjit)')
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix='kjit-peers-', dir=args.tmp)
    log(f"peers: {', '.join(kinds)}; rounds cold {args.rounds}, warm {args.warm_rounds}; "
        f"{args.launches} launches; caches in {tmp}")

    samples = {k: {'cold': [], 'warm': []} for k in kinds}
    done = set()  # peers missing or broken: no more rounds
    for k in kinds:
        miss = missing_packages(k)
        if miss:
            samples[k]['cold'].append({'peer': k, 'mode': 'cold', 'missing': f"no module {', '.join(miss)}"})
            done.add(k)
            log(f'{k}: missing ({", ".join(miss)} not installed)')
    roots = {}
    budget_hit = False
    start = time.perf_counter()
    for i in range(max(args.rounds, args.warm_rounds)):
        if i > 0 and time.perf_counter() - start > args.budget:
            budget_hit = True
            log(f'time budget of {args.budget:.0f} s spent: stopping after {i} round(s)')
            break
        for k in kinds:
            if k in done:
                continue
            for mode in ('cold', 'warm'):
                if mode == 'cold' and i >= args.rounds or mode == 'warm' and i >= args.warm_rounds:
                    continue
                if mode == 'cold':  # a fresh, empty cache; the warm processes use the latest
                    roots[k] = os.path.join(tmp, f'{k}-{i}')
                    os.makedirs(roots[k])
                d = run_process(k, mode, roots[k], args)
                samples[k][mode].append(d)
                log(f'round {i + 1} {k} {mode}: {describe(d)} (process {d["process_s"]:.2f} s)')
                if 'missing' in d or 'error' in d or 'load_error' in d or d.get('check', 'ok') != 'ok':
                    done.add(k)  # nothing more to learn; the row says why
                    break

    results = {k: summarize(k, samples[k]) for k in kinds}
    ratios(results)
    if results.get('kjit_python', {}).get('status') == 'ok':
        results['kjit_python']['import_kjit'] = import_times(args)
    doc = {
        'what': "kjit and its peers on the lecture's square_matrix_kernel: cold, warm, hot, per launch, "
                "process start to first result",
        'machine': machine_info(results),
        'config': {'rounds': args.rounds, 'warm_rounds': args.warm_rounds, 'launches': args.launches,
                   'shape_checked': [H, W], 'launch_shape': [LOOP, LOOP], 'budget_s': args.budget,
                   'timeout_s': args.timeout, 'kjit': args.kjit},
        'budget_hit': budget_hit,
        'peers': results,
        'units': {'cold': 's', 'warm': 's', 'hot': 's', 'launch': 'us per launch', 'warm_process': 's',
              'first_cold': 's', 'first_warm': 's'},
    }
    md = markdown(doc)
    png = os.path.join(args.out, 'peers.png')
    plot_error = plot(doc, png)
    if plot_error:
        doc['plot'] = plot_error
        log(plot_error)
    with open(os.path.join(args.out, 'peers.json'), 'w') as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(args.out, 'peers.md'), 'w') as f:
        f.write(md)
    if args.keep:
        log(f'caches kept in {tmp}')
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.write(md)
    log(f"wrote {os.path.join(args.out, 'peers.json')}, peers.md" + ('' if plot_error else ', peers.png'))
    return 0


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        kind, mode, cache, launches = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        sys.exit(child_main(kind, mode, cache, launches))
    sys.exit(main())
