"""NVRTC from pip's CUDA packages (packaging, no logic of kjit's). libkjit opens NVRTC itself: the
toolkit KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH names, the loader's, the build's
(core/base/nvrtc_library), then the fallbacks `import kjit` names: on a machine with no toolkit,
NVRTC may come with pip's CUDA packages (torch's nvidia/cu13, nvidia-cuda-nvrtc), the candidates
below. `kjit` (the command) hands the folder of the one opened to the CLI."""

from __future__ import annotations

import os

loaded: str | None = None  # the libnvrtc loaded here from a pip package, for a libkjit that links NVRTC (load_from_pip)


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


def opened_from_pip() -> str | None:
    """The libnvrtc libkjit opened when it is one of pip's packages' (None otherwise; opens it if not yet)."""
    if loaded:
        return loaded
    from . import _kjit
    opened = _kjit.toolkit_paths()["nvrtc_library"]
    if not opened:
        return None
    real = os.path.realpath(opened)
    return opened if any(os.path.realpath(c) == real for c in candidates()) else None
