"""Where the package finds NVRTC when the loader alone does not (packaging, no logic of kjit's):
the toolkit that KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH names (the first one set, as libkjit reads
them for NVRTC's headers), else the CUDA packages pip installed (torch's nvidia/cu13,
nvidia-cuda-nvrtc). The library found is loaded by its path before the extension, so that its
libnvrtc.so.N resolves to it; `kjit` (the command) hands the same folder to the CLI."""

from __future__ import annotations

import os

VARIABLES = ("KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH")
loaded = None  # the libnvrtc loaded here (None: the loader found one by itself)


def _libraries_in(folder):
    if not os.path.isdir(folder):
        return []
    # libnvrtc.so.13, not libnvrtc.so.13.0.48 nor the builtins (libnvrtc-builtins.so.13)
    return [os.path.join(folder, n) for n in sorted(os.listdir(folder))
            if n.startswith("libnvrtc.so.") and n.count(".") == 2]


def candidates():
    """Each (where it came from, libnvrtc path) worth trying, in order."""
    out = []
    for variable in VARIABLES:
        root = os.environ.get(variable)
        if not root:
            continue
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            out += [(f"{variable}={root}", path) for path in _libraries_in(os.path.join(root, sub))]
        break  # the first variable set names the toolkit, as for the headers
    import importlib.util
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13/lib", "cuda_nvrtc/lib", "cu12/lib"):
            out += [("pip's nvidia package", path) for path in _libraries_in(os.path.join(root, sub))]
    return out


def load(error):
    """Loads the first libnvrtc of candidates() that opens, or raises ImportError naming where it
    looked and the variables, chained to the loader's `error`."""
    import ctypes
    global loaded
    tried = []
    for where, path in candidates():
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append(f"{path} ({where}): {e}")
            continue
        loaded = path
        return path
    looked = "; ".join(tried) if tried else "none of " + ", ".join(VARIABLES) + " names a toolkit holding it"
    raise ImportError(
        f"kjit: the extension needs NVRTC ({error}); {looked}, and no pip CUDA package (nvidia-cuda-nvrtc) has it. "
        f"Set KJIT_CUDA_HOME (or CUDA_HOME, CUDA_PATH) to the CUDA toolkit's root, install nvidia-cuda-nvrtc, or "
        f"add the folder of libnvrtc.so to LD_LIBRARY_PATH") from error
