"""kjit: compile CUDA source at run time (NVRTC), cache it on disk and in a fleet's Redis, and call
its kernels on torch tensors, CuPy arrays or any DLPack producer.

    import torch, kjit
    mod = kjit.load_inline(name="square", cuda_sources=src, functions=["square_matrix_kernel"])
    mod.square_matrix_kernel[(1, 1), (16, 16)](x, y, 3, 2)

Everything here is libkjit (the C++ library) underneath: the same cache, remote tier, inspection,
profiler and tuner. This module only gives it Python's shapes. It imports neither torch nor CuPy.
See docs/python.md.
"""

from __future__ import annotations

import contextlib as _contextlib
import json as _json
import os as _os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Sequence, Union, overload

from . import _kjit  # noqa: E402  (records no libnvrtc: libkjit opens NVRTC itself, below)

# libkjit opens NVRTC on a thread of its own, now (kjit.prepare; KJIT_PREPARE=off: at the first compile): the
# toolkit KJIT_CUDA_HOME/CUDA_HOME/CUDA_PATH names, the loader's, the build's, then pip's CUDA packages.
from . import _nvrtc  # noqa: E402
for _library in _nvrtc.candidates():
    _kjit.add_nvrtc_fallback(_library)
try:
    _kjit.prepare_as_configured()
except _kjit.UsageError:  # a KJIT_* value libkjit cannot read: the Runtime that reads it says which
    pass

from ._kjit import (  # noqa: F401,E402  (the public names)
    ArgumentError,
    CompileError,
    CompileResult,
    CudaError,
    DriverNotFoundError,
    Error,
    IoError,
    Kernel,
    KernelSignature,
    Link,
    LinkError,
    NvrtcError,
    Program,
    Shard,
    Stream,
    UnavailableError,
    UsageError,
    device_count,
    driver_available,
    driver_unavailable_reason,
    nvrtc_version,
    raw,
    supported_archs,
    synchronize,
)
__version__ = _kjit.version()

if TYPE_CHECKING:
    # A device: None (the current one), an ordinal, "cuda:N", or a torch.device of type cuda.
    DeviceLike = Union[None, int, str, Any]
    PathLike = Union[str, "_os.PathLike[str]"]
    # One str or several (torch's load_inline takes either), or None.
    Texts = Union[None, str, Iterable[str]]

__all__ = [
    "ArgumentError", "CompileError", "CompileResult", "CudaError", "DriverNotFoundError", "Error", "IoError",
    "Kernel", "KernelSignature", "Link", "LinkError", "NvrtcError", "Program", "Shard", "Stream", "UnavailableError",
    "UsageError", "Runtime", "Module", "Global", "compile", "load", "link", "load_inline", "bench", "profile", "range",
    "diff", "resources", "sass", "device_count", "driver_available", "driver_unavailable_reason", "nvrtc_version",
    "supported_archs", "synchronize", "read_program", "info", "raw", "prepare", "warm", "merge_bundles",
]


def prepare(wait: bool = False) -> None:
    """Makes NVRTC ready on a thread of libkjit's (kjit::prepare): `import kjit` does it already unless
    KJIT_PREPARE=off; wait=True returns when it is done. No output changes."""
    _kjit.prepare(bool(wait))


def info() -> dict[str, Any]:
    """What kjit runs with, as `kjit --json info` says it (the same keys): its and NVRTC's versions,
    where the loaded libnvrtc, the toolkit and its CUDA headers were found (a toolkit, or a pip
    package such as torch's nvidia/cu13), the SASS disassembler, the supported archs, the driver
    (True/False, and driver_error why not), the devices and the cache folder. include_dirs is
    toolkit_include_dirs under its earlier name."""
    paths = _kjit.toolkit_paths()
    driver = driver_available()
    disassembler = _kjit.find_disassembler()
    out = {"kjit_version": __version__, "nvrtc_version": nvrtc_version(), "nvrtc_library": paths["nvrtc_library"],
           "toolkit_root": paths["root"], "toolkit_include_dirs": paths["include_dirs"],
           "include_dirs": paths["include_dirs"], "disassembler": disassembler,
           "supported_archs": [f"sm_{a}" for a in supported_archs()], "driver": driver,
           "devices": _kjit.devices() if driver else [], "cache_dir": str(_runtime().cache_dir)}
    if disassembler is None:
        out["disassembler_error"] = _kjit.disassembler_unavailable_reason()
    if not driver:
        out["driver_error"] = driver_unavailable_reason()
    return out


# CompileOptions' fields as C++'s table describes them (name, kind, range, doc): the keywords.
_OPTION_FIELDS = {f["name"]: f for f in _kjit.compile_option_fields()}
_OPTION_NAMES = tuple(_OPTION_FIELDS)

def _text(value: object, what: str) -> str:
    """A str option, checked: kjit refuses a NUL byte (NVRTC would read only what comes before it)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} takes a str; given {type(value).__name__} {value!r}")
    if "\0" in value:
        raise UsageError(f"{what}: {value!r} holds a NUL byte")
    return value


def _texts(values: Any, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{what} takes a list of str; given {type(values).__name__} {values!r}")
    return [_text(v, what) for v in values]


def _options(where: str = "kjit.compile", **options: Any) -> _kjit.CompileOptions:
    """CompileOptions from Python keywords, each checked and named in errors. defines: a dict
    ({"N": 4}) or a list ("N=4", "DEBUG"); flags: a list, or one string split as a shell would
    ("-lineinfo --use_fast_math"), as the CLI's --a-flags."""
    unknown = sorted(set(options) - set(_OPTION_NAMES))
    if unknown:
        meant = [f"{u}= (did you mean {' or '.join(c + '=' for c in close)}?)" if close else f"{u}="
                 for u, close in ((u, _kjit.closest_names(u, list(_OPTION_NAMES))) for u in unknown)]
        raise TypeError(f"{where}: unknown option(s) {', '.join(meant)} (options: {', '.join(_OPTION_NAMES)})")
    o = _kjit.CompileOptions()
    for name, value in options.items():
        field, what = _OPTION_FIELDS[name], f"{where}({name}=)"
        kind = field["kind"]
        if value is None:
            continue
        if kind == "arch":
            value = _text(str(value) if isinstance(value, int) else value, what)
        elif kind == "text":
            value = _text(value, what)
        elif kind == "flag":
            value = bool(value)
        elif kind == "count":
            low, high = field["min"], field["max"]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{what}: an int from {low} to {high} ({field['doc']}); given {value!r}")
        elif not value:
            continue  # an empty list (or dict, or string): the default
        elif kind == "text_list":
            if isinstance(value, dict):
                value = [_text(f"{k}" if v is None else f"{k}={v}", what) for k, v in value.items()]
            else:
                value = _texts(value, what)
        elif kind == "path_list":
            if isinstance(value, (str, _os.PathLike)):
                value = [value]
            value = [_text(_os.fspath(d), what) for d in value]
        elif kind == "raw_flags":
            if isinstance(value, str):
                import shlex
                value = shlex.split(_text(value, what))
            value = _texts(value, what)
        setattr(o, name, value)
    return o


def read_program(file: PathLike) -> Program:
    """A kjit.Program from a .cu file (its name is the path; #include "..." resolves beside it)."""
    if isinstance(file, bytes) or not isinstance(file, (str, _os.PathLike)):
        raise TypeError(f"kjit.read_program takes a path (str or os.PathLike); given {type(file).__name__}")
    path = _os.fspath(file)
    if "\0" in path:
        raise UsageError(f"kjit.read_program: the path {path!r} holds a NUL byte")
    return _kjit.read_program(path)


def _program(program: object, where: str) -> Program:
    if not isinstance(program, Program):
        hint = " (a source string: kjit.Program(\"kernel.cu\", source); a file: kjit.read_program(path))" \
            if isinstance(program, (str, bytes, _os.PathLike)) else ""
        raise TypeError(f"{where} takes a kjit.Program; given {type(program).__name__}{hint}")
    return program


class Global:
    """A __constant__ or __device__ variable: g[:] = array copies in, g.numpy(dtype) reads back."""

    def __init__(self, handle: _kjit.GlobalHandle) -> None:
        self._handle = handle
        self._dtype: Any = None

    @property
    def name(self) -> str:
        return self._handle.name

    @property
    def nbytes(self) -> int:
        return self._handle.nbytes

    @property
    def address(self) -> int:
        return self._handle.address

    def copy_from(self, value: Any) -> None:
        """Copies a numpy array, a CPU or CUDA tensor, bytes or anything numpy can read, of exactly nbytes."""
        if isinstance(value, (bytes, bytearray, memoryview)):
            self._handle.copy_from_host(value)
            return
        if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, wherever it lives
            value = value.detach().cpu().numpy()
        elif hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):  # a CuPy array
            value = value.get()
        import numpy as np
        array = np.ascontiguousarray(value)
        self._dtype = array.dtype
        self._handle.copy_from_host(array)

    def to_bytes(self) -> bytes:
        return self._handle.to_bytes()

    def numpy(self, dtype: Any = None) -> Any:
        """The variable's bytes as a numpy array of dtype (default: the dtype last copied in, else uint8)."""
        import numpy as np
        dtype = np.dtype(dtype if dtype is not None else (self._dtype if self._dtype is not None else np.uint8))
        return np.frombuffer(self._handle.to_bytes(), dtype=dtype).copy()

    def __setitem__(self, key: slice, value: Any) -> None:
        if key != slice(None):
            raise UsageError(f"setting global {self.name}: only the whole variable is copied (g[:] = value)")
        self.copy_from(value)

    def __getitem__(self, key: Any) -> Any:
        return self.numpy()[key]

    def __repr__(self) -> str:
        return f"<kjit.Global {self.name}: {self.nbytes} bytes>"


class _Globals:
    def __init__(self, module: Module) -> None:
        self._module = module
        self._cache: dict[str, Global] = {}

    def __getitem__(self, name: str) -> Global:
        g = self._cache.get(name)
        if g is None:
            g = self._cache[name] = Global(self._module._module.global_(name))
        return g

    def __iter__(self) -> Iterator[str]:
        return iter(self._module._module.global_names)

    def keys(self) -> list[str]:
        return list(self)


class Module:
    """A compiled program loaded on the GPU: its kernels as attributes (mod.square) or by name
    (mod.kernel("scale<float>")), its variables as mod.globals["name"]."""

    def __init__(self, module: _kjit.Module, source: str | None = None) -> None:
        self._module = module
        self._source = source or ""  # names the kernels' parameters (kjit.torch.op, messages)
        self.globals = _Globals(self)

    def kernel(self, name: str) -> Kernel:
        """The kernel `name` (a plain name, a name expression or a mangled name): libkjit looks it up
        once per loaded module and keeps it; this is its Python handle."""
        return self._module.kernel(name, self._source)

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            k = self.kernel(name)
        except UsageError as e:
            raise AttributeError(str(e)) from None
        self.__dict__[name] = k  # an attribute from now on: mod.name does not come here again
        return k

    def global_(self, name: str) -> Global:
        return self.globals[name]

    @property
    def kernel_names(self) -> list[str]:
        return self._module.kernel_names

    @property
    def global_names(self) -> list[str]:
        return self._module.global_names

    @property
    def compile_result(self) -> CompileResult:
        r = self._module.compile_result
        if self._source:
            setattr(r, "_source", self._source)  # signature(name) names the parameters, as kjit.compile's does
        return r

    @property
    def outcome(self) -> str:
        """hit, compiled, remote_hit, ... (the request's outcome, as CompileResult.outcome)."""
        return self._module.outcome

    @property
    def device(self) -> int:
        return self._module.device

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {n.split("(")[0].split("<")[0].split(" ")[-1] for n in self.kernel_names})

    def __repr__(self) -> str:
        r = self.compile_result
        return f"<kjit.Module {r.program_name} {r.arch} ({self.outcome})>"


class Runtime:
    """A request path of its own: Runtime(cache_dir=...). kjit.compile/load use the global one,
    configured from the KJIT_* environment variables."""

    def __init__(self, _runtime: _kjit.Runtime | None = None, **config: Any) -> None:
        if _runtime is None:
            names = [o["name"] for o in _kjit.runtime_options()]
            unknown = sorted(set(config) - set(names))
            if unknown:  # the keyword as written, and the one meant (C++ would name RuntimeConfig's field)
                meant = [f"{u}= (did you mean {' or '.join(c + '=' for c in close)}?)" if close else f"{u}="
                         for u, close in ((u, _kjit.closest_names(u, names)) for u in unknown)]
                raise UsageError(f"kjit.Runtime: unknown option(s) {', '.join(meant)} (options: "
                                 f"{', '.join(n + '=' for n in names)})")
        self._rt = _runtime if _runtime is not None else _kjit.Runtime(**config)

    def compile(self, program: Program, **options: Any) -> CompileResult:
        """Compiles (or takes from the cache) without a GPU for a named arch; returns a CompileResult.
        It keeps the program's source, so result.signature(name) has the parameters' source names."""
        program = _program(program, "kjit.compile")
        result = self._rt.compile(program, _options("kjit.compile", **options))
        setattr(result, "_source", program.source)
        return result

    def load(self, what: Program | Link | CompileResult, device: DeviceLike = None, **options: Any) -> Module:
        """Loads a Program, a Link or a CompileResult on the GPU; returns a Module. Without a GPU,
        kjit.compile(program, arch="sm_90") compiles (any arch)."""
        device = _device(device)
        try:
            if isinstance(what, CompileResult):
                if options:
                    raise UsageError("loading a CompileResult: it is compiled already; pass no compile options")
                return Module(self._rt.load_result(what, device), getattr(what, "_source", None))
            if isinstance(what, Link):
                return Module(self._rt.load_link(what, _options("kjit.load", **options), device))
            what = _program(what, "kjit.load")
            return Module(self._rt.load(what, _options("kjit.load", **options), device), what.source)
        except DriverNotFoundError as e:
            raise DriverNotFoundError(f"{e}\nkjit.load: loading needs a GPU; kjit.compile(program, arch=\"sm_90\") "
                                      "(any arch) compiles without one") from e

    def link(self, link: Link, **options: Any) -> CompileResult:
        if not isinstance(link, Link):
            raise TypeError(f"kjit.link takes a kjit.Link; given {type(link).__name__}")
        return self._rt.link(link, _options("kjit.link", **options))

    def explain(self, program: Program, **options: Any) -> dict[str, Any]:
        key, fields = self._rt.explain(_program(program, "kjit.explain"), _options("kjit.explain", **options))
        return {"key": key, "fields": fields}

    def stats(self) -> dict[str, Any]:
        return self._rt.stats()

    @property
    def cache_dir(self) -> PathLike:
        return self._rt.cache_dir


def _device(device: DeviceLike) -> int | None:
    """A device ordinal from None, an int, "cuda:N" or a torch.device."""
    if device is None or (isinstance(device, int) and not isinstance(device, bool)):
        return device
    index = getattr(device, "index", None)
    if getattr(device, "type", None) == "cuda":
        return 0 if index is None else index
    if isinstance(device, str) and device.startswith("cuda"):
        tail = device[4:].lstrip(":")
        if tail == "" or tail.isdigit():
            return int(tail or 0)
    raise ValueError(f"device= takes None, an int, 'cuda:N' or a torch.device of type cuda; given {device!r}")


_global_runtime: Runtime | None = None


def _runtime() -> Runtime:
    global _global_runtime
    if _global_runtime is None:
        _global_runtime = Runtime(_kjit.Runtime.global_())
    return _global_runtime


def compile(program: Program, **options: Any) -> CompileResult:
    """kjit.compile(kjit.Program("s.cu", src), arch="sm_90", defines={"N": 4}, fast_math=True)"""
    return _runtime().compile(program, **options)


def load(what: Program | Link | CompileResult, device: DeviceLike = None, **options: Any) -> Module:
    """kjit.load(program, arch=..., ...): compiles (or takes from the cache) and loads on the device."""
    return _runtime().load(what, device=device, **options)


def link(what: Link, **options: Any) -> CompileResult:
    return _runtime().link(what, **options)


_NO_CPP = (
    "kjit.load_inline compiles CUDA sources only: kjit calls kernels directly from Python, so there is no C++ "
    "wrapper to build{why}. Drop cpp_sources and the torch binding code, and launch the kernel itself:\n"
    "    mod = kjit.load_inline(name=..., cuda_sources=cuda_src, functions=[\"my_kernel\"])\n"
    "    mod.my_kernel[grid, block](x, y, n)   # torch tensors and scalars, on torch's current stream"
)


_TORCH_CPP = ("torch::", "at::Tensor", "TORCH_CHECK", "PYBIND11_MODULE", "c10::")


# load_inline's answers in this process, by their arguments and the device: the same call again is
# a dict lookup, as CuPy's in-memory kernel cache is (the Module keeps its kernels as attributes).
# It answers what libkjit's module registry would: that registry keeps every module it loaded.
_inline_modules: dict[tuple[Any, ...], Module] = {}


def _inline_key(name: Any, cuda_sources: Any, functions: Any, extra_cuda_cflags: Any, extra_include_paths: Any,
                build_directory: Any) -> tuple[Any, ...] | None:
    """The arguments as one hashable key, before any checking; None when one is of a type to check first."""
    try:
        parts = (name, cuda_sources if isinstance(cuda_sources, str) else tuple(cuda_sources or ()),
                 functions if isinstance(functions, str) else tuple(functions or ()),
                 extra_cuda_cflags if isinstance(extra_cuda_cflags, str) else tuple(extra_cuda_cflags or ()),
                 extra_include_paths if isinstance(extra_include_paths, str) else tuple(extra_include_paths or ()),
                 build_directory, _kjit._current_device())
        hash(parts)
        return parts
    except Exception:  # noqa: BLE001 - unhashable or odd arguments: the checked path says what is wrong
        return None


@overload
def load_inline(name: str, cpp_sources: Texts = None, cuda_sources: Texts = None, functions: Texts = None,
                extra_cflags: Texts = None, extra_cuda_cflags: Texts = None, extra_ldflags: Texts = None,
                extra_include_paths: None | PathLike | Iterable[PathLike] = None,
                build_directory: PathLike | None = None, verbose: bool = False, with_cuda: bool | None = None,
                is_python_module: bool = True, with_pytorch_error_handling: bool = True,
                keep_intermediates: bool = True, use_pch: bool = False, no_implicit_headers: bool = False, *,
                arch: None = None) -> Module: ...


@overload
def load_inline(name: str, cpp_sources: Texts = None, cuda_sources: Texts = None, functions: Texts = None,
                extra_cflags: Texts = None, extra_cuda_cflags: Texts = None, extra_ldflags: Texts = None,
                extra_include_paths: None | PathLike | Iterable[PathLike] = None,
                build_directory: PathLike | None = None, verbose: bool = False, with_cuda: bool | None = None,
                is_python_module: bool = True, with_pytorch_error_handling: bool = True,
                keep_intermediates: bool = True, use_pch: bool = False, no_implicit_headers: bool = False, *,
                arch: str | int) -> CompileResult: ...


def load_inline(name: str, cpp_sources: Texts = None, cuda_sources: Texts = None, functions: Texts = None,
                extra_cflags: Texts = None, extra_cuda_cflags: Texts = None, extra_ldflags: Texts = None,
                extra_include_paths: None | PathLike | Iterable[PathLike] = None,
                build_directory: PathLike | None = None, verbose: bool = False, with_cuda: bool | None = None,
                is_python_module: bool = True, with_pytorch_error_handling: bool = True,
                keep_intermediates: bool = True, use_pch: bool = False, no_implicit_headers: bool = False, *,
                arch: str | int | None = None, **unknown: Any) -> Module | CompileResult:
    """torch.utils.cpp_extension.load_inline's arguments, in torch's order, kjit's way: NVRTC, the disk
    cache, and kernels called from Python (mod.<function>[grid, block](*args)). build_directory is the
    cache folder. arch="sm_90" compiles and checks the functions without a GPU and returns the
    CompileResult instead of loading it. Arguments for torch's C++ wrapper (cpp_sources, extra_cflags,
    extra_ldflags) are refused with what to write instead; the rest of torch's are accepted.
    The same call again in a process (same arguments, same current device) is answered from memory.
    verbose=True prints to stderr how the call was answered (compiled, a cache hit, ...), its key and
    cache folder, and the compile's log (NVRTC's warnings and kjit's notes)."""
    if unknown:
        raise TypeError(_load_inline_unknown(sorted(unknown)))
    memo = None
    if arch is None and not verbose and not cpp_sources and not extra_cflags and not extra_ldflags:
        memo = _inline_key(name, cuda_sources, functions, extra_cuda_cflags, extra_include_paths, build_directory)
        module = _inline_modules.get(memo) if memo is not None else None
        if module is not None:
            return module
    if not isinstance(name, str) or not name:
        raise TypeError(f"kjit.load_inline: name takes a non-empty str; given {name!r}")
    if cpp_sources and cuda_sources is None and any("__global__" in s for s in _as_list(cpp_sources)):
        raise UsageError("kjit.load_inline takes torch's argument order (name, cpp_sources, cuda_sources, ...): "
                         "the CUDA source went to cpp_sources. Pass it as cuda_sources=src")
    if cpp_sources and any(s.strip() for s in _as_list(cpp_sources)):
        raise UsageError(_NO_CPP.format(why=" (cpp_sources was given)"))
    if extra_ldflags or extra_cflags:
        raise UsageError(_NO_CPP.format(why=" (extra_cflags/extra_ldflags are for that host wrapper)"))
    sources = "\n".join(_texts(_as_list(cuda_sources), "kjit.load_inline(cuda_sources=)"))
    if not sources.strip():
        raise UsageError(f"kjit.load_inline {name}: cuda_sources is empty (torch's order is name, cpp_sources, "
                         "cuda_sources: kjit.load_inline(name, cuda_sources=src))")
    if "torch/extension.h" in sources:
        raise UsageError(_NO_CPP.format(why=" (the source includes <torch/extension.h>, a host-side header)"))
    if isinstance(extra_cuda_cflags, str):  # one string, split as a shell would, as flags= is
        import shlex
        extra_cuda_cflags = shlex.split(_text(extra_cuda_cflags, "kjit.load_inline(extra_cuda_cflags=)"))
    flags = _texts(_as_list(extra_cuda_cflags), "kjit.load_inline(extra_cuda_cflags=)")
    flags += [f"-I{_os.fspath(d)}" for d in _as_list(extra_include_paths)]
    functions = _texts(_as_list(functions), "kjit.load_inline(functions=)")
    cache = _os.fspath(build_directory) if build_directory else ""
    try:
        if arch is not None:
            rt = Runtime(cache_dir=cache) if cache else _runtime()
            result = rt.compile(Program(name + ".cu", sources), arch=arch, flags=flags)
            for f in functions:
                result.signature(f)  # UsageError naming the kernels there are, when f is not one
            if verbose:  # as C++'s load_inline says it through the log (kjit: info: ...), with the log
                import sys
                sys.stderr.write(f"kjit: info: load_inline {name}: {_OUTCOMES.get(result.outcome, result.outcome)} "
                                 f"(key {result.key}, cache {rt.cache_dir}; compiled for {result.arch}, not loaded)\n"
                                 + result.log + ("" if not result.log or result.log.endswith("\n") else "\n"))
            return result
        module = Module(_kjit.load_inline(name, sources, functions, flags, cache, bool(verbose)), sources)
        if memo is not None:
            _inline_modules[memo] = module
        return module
    except DriverNotFoundError as e:
        raise DriverNotFoundError(f"{e}\nkjit.load_inline {name}: loading needs a GPU; arch=\"sm_90\" (any arch) "
                                  "compiles and checks the source without one") from e
    except CompileError as e:
        used = [t for t in _TORCH_CPP if t in sources]
        if not used:
            raise
        raise UsageError(_NO_CPP.format(why=f" (the source uses {', '.join(used)}: the C++ wrapper torch compiles as "
                                            "host code, which NVRTC cannot)") + "\n\nNVRTC said:\n" + e.log) from e


# How a compile was answered, as C++'s load_inline says it (core/load_inline.cpp).
_OUTCOMES = {"hit": "cache hit", "remote_hit": "remote cache hit", "waited": "waited for another compile",
             "compiled": "compiled", "registry": "already loaded"}


def _load_inline_unknown(names: list[str]) -> str:
    """load_inline's message for keywords it does not take: the argument meant, or for a compile
    option (fast_math=, kjit.compile's) the flag that says it in extra_cuda_cflags."""
    import inspect
    own = [n for n in inspect.signature(load_inline).parameters if n != "unknown"]
    said = []
    for n in names:
        close = _kjit.closest_names(n, own)
        option = _kjit.closest_names(n, list(_OPTION_NAMES)) if n not in _OPTION_FIELDS else [n]
        if close:
            said.append(f"{n}= (did you mean {' or '.join(c + '=' for c in close)}?)")
        elif option:
            field = _OPTION_FIELDS[option[0]]
            flag = field["nvrtc"] or next((f for f in field["raw_flags"] if f), "") or field["raw_prefix"]
            flag += "" if field["kind"] == "flag" else "..."  # a value follows: --maxrregcount=...
            said.append(f"{n}= (kjit.compile's {option[0]}=; load_inline takes torch's arguments, so give it as a "
                        f"flag: extra_cuda_cflags=[\"{flag}\"])")
        else:
            said.append(f"{n}=")
    return (f"kjit.load_inline: unknown argument(s) {', '.join(said)}; it takes torch's arguments: "
            f"{', '.join(own)}")


def _as_list(value: Any) -> list[Any]:
    """None, one str, or a list of them, as a list."""
    if value is None:
        return []
    if isinstance(value, (str, _os.PathLike)):
        return [value]
    return list(value)


_ReturnMode = Literal["min", "max", "mean", "median", "all"]


@overload
def bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100, grad_to_none: Iterable[Any] | None = None,
          quantiles: None = None, return_mode: Literal["min", "max", "mean", "median"] = "mean", flush_l2: bool = True,
          stream: Any = None, device: int = 0) -> float: ...


@overload
def bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100, grad_to_none: Iterable[Any] | None = None,
          quantiles: None = None, *, return_mode: Literal["all"], flush_l2: bool = True, stream: Any = None,
          device: int = 0) -> list[float]: ...


@overload
def bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100, grad_to_none: Iterable[Any] | None = None,
          quantiles: Sequence[float] | None = None, return_mode: _ReturnMode = "mean", flush_l2: bool = True,
          stream: Any = None, device: int = 0) -> float | list[float]: ...


def bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100, grad_to_none: Iterable[Any] | None = None,
          quantiles: Sequence[float] | None = None, return_mode: _ReturnMode = "mean", flush_l2: bool = True,
          stream: Any = None, device: int = 0) -> float | list[float]:
    """Times fn() like triton.testing.do_bench: CUDA events, an L2 flush before each call, the .grad
    of each tensor in grad_to_none reset before each call; returns the mean (return_mode: "min",
    "max", "mean", "median", "all") in ms, or the quantiles asked for."""
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise UsageError(f"kjit.bench: return_mode is min, max, mean, median or all; given {return_mode!r}")
    if not callable(fn):
        raise TypeError(f"kjit.bench: fn takes a callable; given {type(fn).__name__}")
    if grad_to_none:  # as Triton's: each tensor's .grad reset before every call
        tensors, timed = list(grad_to_none), fn

        def reset_then_time() -> None:
            for t in tensors:
                t.grad = None
            timed()
        fn = reset_then_time
    r = _kjit.bench(fn, float(warmup), float(rep), list(quantiles or []), bool(flush_l2), stream, device)
    if quantiles:
        q: list[float] = r["quantile_ms"]
        return q[0] if len(q) == 1 else q
    if return_mode == "all":
        samples: list[float] = r["samples_ms"]
        return samples
    mean: float = r[f"{return_mode}_ms"]
    return mean


class profile:
    """with kjit.profile() as p: ... records every kernel, copy and launch (torch's too) through
    kjit's CUPTI profiler; then p.table(), p.summary(), p.export_chrome_trace(path).
    metrics="sol" (or Nsight Compute metric names) adds the speed-of-light table's counters."""

    def __init__(self, max_events: int = 2_000_000, memory: bool = True,
                 metrics: str | Sequence[str] | None = None) -> None:
        names = [metrics] if isinstance(metrics, str) else list(metrics or [])
        self._options = (max_events, memory, names)
        self._profiler: _kjit.Profiler | None = None

    def __enter__(self) -> profile:
        self._profiler = _kjit.Profiler(*self._options)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.stop()
        return False

    def _recorder(self) -> _kjit.Profiler:
        if self._profiler is None:
            raise UsageError("kjit.profile: nothing was recorded yet (use it as `with kjit.profile() as p:`)")
        return self._profiler

    def stop(self) -> None:
        if self._profiler is not None:
            if driver_available() and device_count() > 0:
                synchronize()
            self._profiler.stop()

    @property
    def active(self) -> bool:
        return self._profiler is not None and self._profiler.active

    @property
    def message(self) -> str:
        return self._profiler.message if self._profiler is not None else ""

    def table(self, sort_by: str = "gpu_total", limit: int = 0, by_shape: bool = False, phases: bool = True) -> str:
        return self._recorder().table(sort_by, limit, by_shape, phases)

    def summary(self, sort_by: str = "gpu_total", limit: int = 0, by_shape: bool = False) -> list[dict[str, Any]]:
        """The kernel rows as dicts (name, calls, gpu_total_us, ...)."""
        rows: list[dict[str, Any]] = _json.loads(self._recorder().summary_json(sort_by, limit, by_shape))["kernels"]
        return rows

    def summary_json(self, sort_by: str = "gpu_total", limit: int = 0, by_shape: bool = False) -> str:
        return self._recorder().summary_json(sort_by, limit, by_shape)

    def chrome_trace(self) -> str:
        return self._recorder().chrome_trace()

    def export_chrome_trace(self, path: PathLike) -> None:
        self._recorder().export_chrome_trace(_os.fspath(path))


def __getattr__(name: str) -> Any:
    # kjit.torch (kernels as torch operators) is imported when first named: `import kjit` imports no torch.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'kjit' has no attribute {name!r}")


@_contextlib.contextmanager
def range(name: str) -> Iterator[None]:  # noqa: A001  (torch.profiler.record_function's role, under kjit's name)
    """A range of the caller's own ("decode") in a profile's table and trace, and an NVTX range."""
    r = _kjit._range_begin(str(name))
    try:
        yield
    finally:
        del r


def _label(result: CompileResult) -> str:
    """A diff side's label: the program and the options it was compiled with."""
    shown = [o for o in result.options if not o.startswith(("-I", "--include-path", "--pre-include", "-include"))]
    return f"{result.program_name} [{' '.join(shown)}]" if shown else result.program_name


def diff(a: CompileResult | str, b: CompileResult | str, raw: bool = False) -> _kjit.DiffResult:
    """What changed between two builds: CompileResults or PTX strings. str(d) is the report; each
    side is labelled with its program and options."""
    if isinstance(a, str) and isinstance(b, str):
        return _kjit.diff_ptx(a, b, raw)
    if not isinstance(a, CompileResult) or not isinstance(b, CompileResult):
        raise TypeError(f"kjit.diff takes two CompileResults or two PTX strings; given {type(a).__name__} and "
                        f"{type(b).__name__}")
    return _kjit.diff(a, b, raw, _label(a), _label(b))


def resources(what: Program | CompileResult, **options: Any) -> list[dict[str, Any]]:
    """ptxas's resource usage per function (registers, spills, shared memory): of a CompileResult
    compiled with the report, or of a Program compiled here with it (arch= as in compile)."""
    if isinstance(what, Program):
        what = _runtime()._rt.compile(what, _kjit.with_resource_report(_options("kjit.resources", **options)))
    elif not isinstance(what, CompileResult):
        raise TypeError(f"kjit.resources takes a kjit.Program or a CompileResult; given {type(what).__name__}")
    try:
        return _kjit.resources(what)
    except UsageError as e:
        if "without ptxas's report" not in str(e):
            raise
        raise UsageError(f"kjit.resources: {what.program_name} was compiled without ptxas's report (-Xptxas=-v), and "
                         "its cubin alone does not say what spills: pass the Program, kjit.resources(program, "
                         f"arch=\"{what.arch}\") (compiled with the report, through the cache), or compile it with "
                         "flags=[\"-Xptxas=-v\"]") from None


def sass(result: CompileResult, function: str = "") -> str:
    """SASS of a result's cubin (nvdisasm or cuobjdump must be installed)."""
    return _kjit.sass(result, function)


def warm(sources: Any = None, arch: Any = None, jobs: int = 0, shard: Any = None, bundle: Any = None,
         precompiled_headers: bool = True, **config: Any) -> Any:
    """`kjit warm` from Python: compiles every kernel x variant x arch of kernel manifests (folders
    holding a kjit.json, or kjit.json files; None: the installed kernels_src) into the cache ahead of
    time. arch: "sm_90", or a list (None: the GPU at hand). shard=(i, n) (or "i/n", "auto", "auto/n",
    a kjit.Shard) compiles only the items of shard i of n, by their cache keys, as `kjit warm --shard`
    does; bundle= then writes the entries warmed into that bundle (for kjit.merge_bundles). config:
    kjit.Runtime's keywords (cache_dir=, remote_cache=, remote_signing_key_file=, ...; the KJIT_*
    environment otherwise). Returns `kjit --json warm`'s document as a dict ("ok": nothing failed)."""
    return _kjit.warm([_os.fspath(s) for s in _as_list(sources)], _as_list(arch), jobs, precompiled_headers, shard,
                      _os.fspath(bundle) if bundle is not None else "", **config)


def merge_bundles(inputs: Any, output: Any, **config: Any) -> Any:
    """`kjit cache bundle merge`: one bundle of several (each checked whole first), each key once,
    byte for byte; signed with remote_signing_key_file=/remote_secret_file= (kjit.Runtime's keywords,
    else KJIT_REMOTE_*), inputs checked with those keys. Returns the merged bundle's manifest."""
    return _kjit.merge_bundles([_os.fspath(f) for f in _as_list(inputs)], _os.fspath(output), **config)
