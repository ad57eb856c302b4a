"""NVRTC from pip's CUDA packages (packaging, no logic of kjit's). libkjit opens NVRTC itself at
its first use: the toolkit KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH names, the loader's, the
build's (core/base/nvrtc_library). On a machine with no toolkit, NVRTC may come with pip's CUDA
packages (torch's nvidia/cu13, nvidia-cuda-nvrtc): loaded here by its path, libkjit finds it
already in the process; `kjit` (the command) hands the same folder to the CLI."""

from __future__ import annotations

import os

loaded: str | None = None  # the libnvrtc loaded here from a pip package (None: libkjit found one by itself)


def candidates() -> list[str]:
    """The libnvrtc files of pip's CUDA packages, in order."""
    import importlib.util
    out: list[str] = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13/lib", "cuda_nvrtc/lib", "cu12/lib"):
            folder = os.path.join(root, sub)
            if os.path.isdir(folder):
                # libnvrtc.so.13, not libnvrtc.so.13.0.48 nor the builtins (libnvrtc-builtins.so.13)
                out += [os.path.join(folder, n) for n in sorted(os.listdir(folder))
                        if n.startswith("libnvrtc.so.") and n.count(".") == 2]
    return out


def load_from_pip() -> str | None:
    """Loads the first of candidates() that opens; its path, or None."""
    import ctypes
    global loaded
    for path in candidates():
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        loaded = path
        return path
    return None
