"""The package's shape as an installed package has it: the kjit command (`python -m kjit` and the
console script's entry point, kjit._cli.main) runs the CLI with its arguments, exit status and
output; the type stub of the extension names only what exists and everything the package
re-exports from it; py.typed is there; NVRTC is libkjit's, pip's packages only a fallback. CPU only."""

import ast
import os
import pathlib
import subprocess
import sys

import pytest

import kjit
import kjit._cli
import kjit._kjit
import kjit._nvrtc

PACKAGE = pathlib.Path(kjit.__file__).parent


def run_kjit(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kjit", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd="/")


def test_python_m_kjit_runs_the_cli_with_its_exit_status_and_streams():
    cli = kjit._cli.executable()
    if cli is None:
        pytest.skip("this package has no kjit/bin/kjit (built against an installed kjit without its CLI)")
    direct = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=60)
    via = run_kjit("--version")
    assert via.returncode == 0, via.stderr
    assert via.stdout == direct.stdout and via.stdout.splitlines()[0] == "kjit " + kjit.__version__
    assert via.stdout.splitlines()[1].startswith("NVRTC ")  # and the NVRTC and toolkit it compiles with
    # A usage error: exit 2, diagnostics on stderr, stdout empty (the CLI's contract, passed through).
    bad = run_kjit("cache", "stats", "--no-such-flag-%d" % os.getpid())
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert "no-such-flag" in bad.stderr
    # Data on stdout: `kjit cache explain` of a random kernel prints its key, as the CLI does.
    import random
    tmp = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"kjit-package-{os.getpid()}-{random.getrandbits(32):08x}"
    tmp.mkdir()
    try:
        src = tmp / "k.cu"
        src.write_text("__global__ void k(float* p) { p[threadIdx.x] = %d.5f; }\n" % random.randrange(1 << 20))
        env = dict(os.environ, KJIT_CACHE_DIR=str(tmp / "cache"))
        mine = run_kjit("cache", "explain", str(src), "--arch", "sm_90", env=env)
        theirs = subprocess.run([cli, "cache", "explain", str(src), "--arch", "sm_90"], capture_output=True, text=True,
                                env=env, timeout=120)
        assert mine.returncode == theirs.returncode == 0, mine.stderr
        assert mine.stdout == theirs.stdout and mine.stdout
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_console_script_entry_point_is_the_launcher():
    text = (pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert 'kjit = "kjit._cli:main"' in text
    assert callable(kjit._cli.main)


def test_without_the_packaged_cli_the_command_says_so_and_exits_3(monkeypatch, capsys):
    monkeypatch.setattr(kjit._cli, "executable", lambda: None)
    assert kjit._cli.main(["--version"]) == 3
    assert "holds no kjit command" in capsys.readouterr().err


def _stub():
    return ast.parse((PACKAGE / "_kjit.pyi").read_text())


def test_the_stub_names_only_what_the_extension_has_and_all_the_package_re_exports():
    tree = _stub()
    declared = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))} - {"__getattr__"}
    missing = sorted(n for n in declared if not hasattr(kjit._kjit, n))
    assert not missing, f"_kjit.pyi declares what the extension lacks: {missing}"
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        real = getattr(kjit._kjit, cls.name)
        # Not the dunders: kjit sets some protocol slots on the type itself (a Kernel's subscript), unseen by hasattr.
        members = {m.name for m in cls.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("__")}
        members |= {m.target.id for m in cls.body if isinstance(m, ast.AnnAssign)}
        absent = sorted(m for m in members if not hasattr(real, m))
        assert not absent, f"_kjit.pyi: {cls.name} has no {absent}"
    exported = {n for n in kjit.__all__ if getattr(kjit, n, None) is getattr(kjit._kjit, n, object())}
    assert not sorted(exported - declared), f"re-exported from the extension but not in _kjit.pyi: {sorted(exported - declared)}"
    assert (PACKAGE / "py.typed").exists()


def test_nvrtc_is_open_at_import_and_pip_packages_are_only_a_fallback():
    # libkjit opened NVRTC (the toolkit here); the pip fallback loaded nothing.
    assert kjit._kjit.toolkit_paths()["nvrtc_library"].endswith(".so." + kjit.nvrtc_version().split(".")[0])
    assert kjit._nvrtc.loaded is None
    assert all("nvidia" in c for c in kjit._nvrtc.candidates())
