"""The package's shape as an installed package has it: the kjit command (`python -m kjit` and the
console script's entry point, kjit._cli.main) runs the CLI with its arguments, exit status and
output; the type stub of the extension names only what exists and everything the package
re-exports from it; py.typed is there; NVRTC is libkjit's, pip's packages only a fallback, made ready
at import without changing any output. CPU only."""

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


def _members(cls):
    """A stub class's members: its methods and properties, and its annotated attributes."""
    names = {m.name for m in cls.body if isinstance(m, ast.FunctionDef)}
    return names | {m.target.id for m in cls.body if isinstance(m, ast.AnnAssign)}


def test_the_stub_names_what_the_extension_has_both_ways():
    tree = _stub()
    declared = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = sorted(n for n in declared if not hasattr(kjit._kjit, n))
    assert not missing, f"_kjit.pyi declares what the extension lacks: {missing}"
    # The other way: every name of the extension, the private ones (_current_device) too, is in the stub.
    public = {n for n in dir(kjit._kjit) if not n.startswith("__")}
    assert not sorted(public - declared), f"the extension has names _kjit.pyi does not declare: {sorted(public - declared)}"
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        real = getattr(kjit._kjit, cls.name)
        members = _members(cls)
        if issubclass(real, BaseException):  # attributes a raise sets on the instance (.log), unseen on the type
            members = {m for m in members if not any(isinstance(b, ast.AnnAssign) and b.target.id == m for b in cls.body)}
        # Not the dunders: kjit sets some protocol slots on the type itself (a Kernel's subscript), unseen by hasattr.
        absent = sorted(m for m in members if not m.startswith("__") and not hasattr(real, m))
        assert not absent, f"_kjit.pyi: {cls.name} has no {absent}"
        if "__getattr__" in members or issubclass(real, BaseException):
            continue  # partial: what it does not list is Any
        # A class without __getattr__ is whole: each of the type's own members (pybind11's or kjit's) is listed.
        own = {m for m in vars(real) if not m.startswith("_")}
        unlisted = sorted(own - members)
        assert not unlisted, f"_kjit.pyi: {cls.name} lists no {unlisted} (add them, or end the class in __getattr__)"
    exported = {n for n in kjit.__all__ if getattr(kjit, n, None) is getattr(kjit._kjit, n, object())}
    assert not sorted(exported - declared), f"re-exported from the extension but not in _kjit.pyi: {sorted(exported - declared)}"
    assert (PACKAGE / "py.typed").exists()


def test_the_stubs_compile_options_are_the_tables_rows():
    import stub_options
    fields = kjit._kjit.compile_option_fields()
    stub = (PACKAGE / "_kjit.pyi").read_text()
    written = stub_options.block(fields)
    assert stub_options.current(stub) == written, (
        "_kjit.pyi's CompileOptions fields are not compile_option_fields()'s rows; rewrite them with "
        "PYTHONPATH=<build>/python python3 python/tests/stub_options.py --write python/src/kjit/_kjit.pyi\n"
        f"the rows say:\n{written}")
    cls = next(n for n in _stub().body if isinstance(n, ast.ClassDef) and n.name == "CompileOptions")
    fields_in_stub = [m.target.id for m in cls.body if isinstance(m, ast.AnnAssign)]
    assert fields_in_stub == [f["name"] for f in fields]  # both ways, in the table's order
    assert "nvcc_environment" in fields_in_stub
    options = kjit._kjit.CompileOptions()
    for f in fields:  # each annotated type is the type the binding returns
        expected = {"str": str, "bool": bool, "int": int, "list[str]": list}[stub_options.KIND_TYPES[f["kind"]]]
        assert type(getattr(options, f["name"])) is expected, f["name"]


def test_nvrtc_is_the_toolkits_and_pip_packages_are_only_a_fallback():
    # libkjit opened NVRTC (the toolkit here); the pip fallback loaded nothing.
    assert kjit._kjit.toolkit_paths()["nvrtc_library"].endswith(".so." + kjit.nvrtc_version().split(".")[0])
    assert kjit._nvrtc.loaded is None
    assert kjit._nvrtc.opened_from_pip() is None
    assert all("nvidia" in c for c in kjit._nvrtc.candidates())


PREPARED = r'''
import json, sys, kjit
if sys.argv[1] == "wait":
    kjit.prepare(wait=True)
r = kjit.Runtime(cache_disabled=True).compile(kjit.Program("k.cu", sys.argv[2]), arch="sm_90")
print(json.dumps({"ptx": r.ptx, "cubin": r.cubin.hex(), "log": r.log, "key": r.key}))
'''


def test_nvrtc_prepared_at_import_or_by_prepare_changes_no_output():
    # Fresh processes: KJIT_PREPARE=off (the compile opens NVRTC), import's preparation racing the
    # compile, and kjit.prepare(wait=True) first; a random kernel's PTX, cubin, log and key agree.
    import random
    a, b = random.randint(2, 10 ** 6), random.randint(2, 10 ** 6)
    src = (f'extern "C" __global__ void scale(float* x, int n) {{ int i = threadIdx.x; if (i < n) x[i] = x[i] * {a}.0f + {b}; }}\n'
           f'template <typename T> __global__ void twice(T* x) {{ x[threadIdx.x] *= T({a % 97 + 2}); }}\n'
           'template __global__ void twice<float>(float*);\n')
    outputs = []
    for mode, prepare in (("plain", "off"), ("plain", "on"), ("wait", "on")):
        env = dict(os.environ, KJIT_PREPARE=prepare)
        p = subprocess.run([sys.executable, "-c", PREPARED, mode, src], capture_output=True, text=True, env=env,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        outputs.append(p.stdout)
    assert outputs[0] and '"ptx": ""' not in outputs[0]
    assert outputs[1] == outputs[0]
    assert outputs[2] == outputs[0]


def test_prepare_waits_and_a_bad_kjit_prepare_is_said_by_the_runtime(monkeypatch):
    kjit.prepare(wait=True)  # returns once NVRTC is ready (import started it already)
    assert kjit._kjit.toolkit_paths()["nvrtc_library"]
    monkeypatch.setenv("KJIT_PREPARE", "later")
    with pytest.raises(kjit.UsageError, match="KJIT_PREPARE"):
        kjit.Runtime()
    p = subprocess.run([sys.executable, "-c", "import kjit"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, KJIT_PREPARE="later"))
    assert p.returncode == 0, p.stderr  # the import itself goes on
