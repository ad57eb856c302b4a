"""`kjit`, the command, for a Python install: the console script and `python -m kjit` run the kjit
executable the package ships (kjit/bin/kjit, the same CLI as kjit's C++ install), with its arguments,
its exit status, and NVRTC from pip's CUDA packages when that is where the package found it. A
launcher only: no logic here."""

from __future__ import annotations

import os
import sys
from typing import Sequence


def executable() -> str | None:
    """The packaged CLI, or None when this install has none."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kjit")
    return path if os.access(path, os.X_OK) else None


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    path = executable()
    if path is None:
        sys.stderr.write(
            "kjit: this install of the Python package holds no kjit command (kjit/bin/kjit): it was built against "
            "an installed kjit without its CLI. Install kjit's CLI (cmake --install of kjit's build), or "
            "reinstall the package from kjit's sources (docs/python.md)\n")
        return 3
    from . import _nvrtc  # the package is imported: NVRTC is found by libkjit or in pip's packages
    env = dict(os.environ)
    pip = _nvrtc.opened_from_pip()
    if pip:  # pip's, which the CLI (libkjit) does not look for: it gets the same folder
        folder = os.path.dirname(pip)
        env["LD_LIBRARY_PATH"] = folder + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(path, ["kjit"] + args, env)


if __name__ == "__main__":
    sys.exit(main())
