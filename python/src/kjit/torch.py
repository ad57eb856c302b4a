"""kjit.torch: a kjit kernel as a torch operator (torch.library), so that torch.compile traces it
without a graph break, CUDA graphs capture it and autograd differentiates it.

    square = kjit.torch.op(mod.square_matrix_kernel, "mylib::square",
                           outputs={"result": lambda matrix, width, height: torch.empty_like(matrix)},
                           grid=lambda matrix, width, height: ((width + 15) // 16, (height + 15) // 16),
                           block=(16, 16))
    y = square(x, w, h)

The op's schema is the kernel's own parameter list (read from its PTX and mangled name, the names
from its source): a pointer is a Tensor, a `const` pointer is only read, a non-const pointer is an
output (`outputs=`) or a mutated input (`mutates=`), an integer, floating-point or bool scalar is
`SymInt` (torch's int), `float` or `bool`. The fake implementation is `outputs`' functions; the real one allocates
through them and launches on the tensors' device and torch's current stream there. Mistakes are
UsageErrors at registration. This module imports torch only when `op` is called; `schema` needs
no torch. See docs/python.md.
"""

from __future__ import annotations

import inspect as _inspect
import keyword as _keyword
from typing import Any

from ._kjit import ArgumentError, UsageError

# Integers are SymInt, as torch.library.custom_op infers for an int: torch.compile may pass a symbolic
# size (dynamic shapes) where the kernel takes an int; the real call always gets a Python int.
_SCALARS = {"signed integer": "SymInt", "unsigned integer": "SymInt", "integer": "SymInt", "floating point": "float",
            "bool": "bool"}  # by kjit.KernelSignature's kinds
_TENSORS = ("pointer", "pointer or 64-bit integer")
_registered: dict[str, Any] = {}   # qualname -> torch.library.Library (kept alive: a collected Library unregisters its op)
_kernels: dict[int, Any] = {}      # kernel._identity -> (qualname, kernel), the kernel kept alive


class _Plan:
    """How an op's arguments become a kernel's: inputs and outputs by name, each a kernel parameter."""

    def __init__(self, qualname, namespace, name, inputs, outputs, mutated, schema, order):
        self.qualname, self.namespace, self.name = qualname, namespace, name
        self.inputs = inputs        # [(name, parameter index)] in the kernel's order
        self.outputs = outputs      # [(name, parameter index)] in outputs= order
        self.mutated = mutated      # input names the kernel writes
        self.schema = schema        # "square(Tensor matrix, int width, int height) -> Tensor"
        self.order = order          # per kernel parameter: the op argument's or output's name


def _python_name(name):
    return name + "_" if name and _keyword.iskeyword(name) else name


def _describe(p):
    shown = p["source_name"] or p["name"]
    return f"parameter #{p['index']} ({p['type']} {shown})"


def _arity(fn):
    """The number of positional parameters of a callable, or None when it takes *args."""
    try:
        sig = _inspect.signature(fn)
    except (TypeError, ValueError):
        return None, []
    names = []
    for q in sig.parameters.values():
        if q.kind is q.VAR_POSITIONAL:
            return None, []
        if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD):
            names.append(q.name)
    return len(names), names


def _plan(kernel, qualname, outputs, mutates, callables):
    where = f"registering {qualname!r} as a torch operator"
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise UsageError(f"{where}: the name is \"namespace::name\" (\"mylib::square\")")
    namespace, name = qualname.split("::")
    for part in (namespace, name):
        if not part.isidentifier() or _keyword.iskeyword(part):
            raise UsageError(f"{where}: {part!r} is not an identifier; the name is \"namespace::name\"")
    params = list(kernel.parameters)
    kernel_name = getattr(kernel, "kernel", None) or getattr(kernel, "name", "?")
    where = f"registering kernel {kernel_name} as {qualname}"
    for p in params:
        if p["kind"] not in _TENSORS and p["kind"] not in _SCALARS:
            raise UsageError(f"{where}: {_describe(p)} is passed by value as {p['size']} bytes ({p['kind']}); a "
                             "torch schema has Tensor, int, float and bool only: pass it as a tensor or as scalars")
    # A source name that is a Python keyword ("in") gets a trailing underscore, as in the op's schema.
    params = [dict(p, source_name=_python_name(p["source_name"])) for p in params]
    by_name = {p["source_name"]: p["index"] for p in params if p["source_name"]}
    named = len(by_name) == len(params)

    def resolve(entry, what):
        if isinstance(entry, bool) or not isinstance(entry, (int, str)):
            raise UsageError(f"{where}: {what} names parameters by name or index; given {entry!r}")
        if isinstance(entry, int):
            if not 0 <= entry < len(params):
                raise UsageError(f"{where}: {what} {entry} is past the kernel's {len(params)} parameters")
            index = entry
        elif entry in by_name:
            index = by_name[entry]
        else:
            known = ", ".join(by_name) if named else "unknown: the kernel was loaded without its source; use indexes"
            raise UsageError(f"{where}: {what} {entry!r} is no parameter of the kernel (its names: {known})")
        if params[index]["kind"] not in _TENSORS:
            raise UsageError(f"{where}: {what} {entry!r} is {_describe(params[index])}, a scalar; only a pointer "
                             "can be written")
        return index

    mutated = [resolve(m, "mutates") for m in (mutates or ())]
    if len(set(mutated)) != len(mutated):
        raise UsageError(f"{where}: mutates names a parameter twice")
    outputs = dict(outputs or {})
    taken = set(mutated)
    out: list[Any] = []
    # The pointers the kernel may write: non-const ones, and those whose type is unknown (an extern "C"
    # kernel's 64-bit parameter read without its declaration).
    free = [p["index"] for p in params if p["kind"] in _TENSORS and not p["read_only"] and p["index"] not in taken]
    for key in outputs:
        if isinstance(key, str) and not key.isidentifier():
            raise UsageError(f"{where}: output name {key!r} is not an identifier")
        if isinstance(key, int) or key in by_name:
            index = resolve(key, "the output")
        else:
            # A name the kernel's parameters do not have. Where the written pointers have source names,
            # it is a slip (as in mutates=), never taken by position; where they have none (the kernel
            # was loaded without its source), the caller's name goes to the next of them, in order.
            left = [i for i in free if i not in taken]
            unnamed = [i for i in left if not params[i]["source_name"]]
            if not unnamed:
                writable = [params[i]["source_name"] for i in free if params[i]["source_name"]]
                close = _closest(key, writable) or _closest(key, list(by_name))
                meant = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
                if not left:
                    raise UsageError(f"{where}: outputs has {len(outputs)} entries but the kernel writes only "
                                     f"{len(out)} pointer(s) besides mutates ({kernel_signature(params)})")
                raise UsageError(f"{where}: the output {key!r} is no parameter of the kernel{meant}; outputs= names "
                                 f"the pointers it writes: {', '.join(writable) or 'none'} "
                                 f"({kernel_signature(params)})")
            index = unnamed[0]
        if index in taken:
            raise UsageError(f"{where}: {_describe(params[index])} is both an output and mutated, or an output twice")
        if params[index]["read_only"]:
            raise UsageError(f"{where}: {_describe(params[index])} is const: the kernel never writes it, so it "
                             "cannot be an output")
        taken.add(index)
        out.append((key if isinstance(key, str) else (params[index]["source_name"] or f"out{len(out)}"), index))
    for p in params:
        if p["kind"] == "pointer" and not p["read_only"] and p["index"] not in taken:
            raise UsageError(f"{where}: {_describe(p)} is written by the kernel (not const): declare it in outputs= "
                             "(a new tensor the op returns) or mutates= (an input it changes)")
        if p["kind"] == "pointer or 64-bit integer" and p["index"] not in taken:
            # Its type is unknown, so whether the kernel writes it is too: as a non-const pointer, it must
            # be declared, never taken as a read-only input without a word.
            raise UsageError(f"{where}: {_describe(p)} may be a pointer the kernel writes: its type is unknown (an "
                             "extern \"C\" kernel whose declaration was not read: no source, or a type kjit cannot "
                             "resolve). Declare it in outputs= or mutates=, or give the kernel its source "
                             "(kjit.compile/kjit.load of a Program, KernelSignature.read_declaration) so that a "
                             "const pointer is known as read-only")
    input_params = [p for p in params if p["index"] not in {i for _, i in out}]
    # Input names: the source's, else those of the functions the caller gave (they take the inputs).
    names = [p["source_name"] for p in input_params]
    for label, fn in callables:
        count, fn_names = _arity(fn)
        if count is not None and count != len(input_params):
            shown = ", ".join(n or f"#{p['index']}" for n, p in zip(names, input_params))
            raise UsageError(f"{where}: {label} takes {count} argument(s); the op's inputs are {len(input_params)} "
                             f"({shown})")
        if count is not None and not all(names):
            names = [n or f for n, f in zip(names, fn_names)]
    names = [n or f"arg{p['index']}" for n, p in zip(names, input_params)]
    out_names = [n for n, _ in out]
    every = names + out_names
    if len(set(every)) != len(every) or any(_keyword.iskeyword(n) or not n.isidentifier() for n in every):
        raise UsageError(f"{where}: the op's argument and output names must be distinct identifiers: {every}")
    alias = iter("abcdefghijklmnopqrstuvwxyz")
    args = []
    for n, p in zip(names, input_params):
        if p["kind"] in _TENSORS:
            args.append(f"Tensor({next(alias)}!) {n}" if p["index"] in mutated else f"Tensor {n}")
        else:
            args.append(f"{_SCALARS[p['kind']]} {n}")
    returns = "()" if not out else "Tensor" if len(out) == 1 else "(" + ", ".join("Tensor" for _ in out) + ")"
    schema = f"{name}({', '.join(args)}) -> {returns}"
    order = [None] * len(params)
    for n, p in zip(names, input_params):
        order[p["index"]] = n
    for n, i in out:
        order[i] = n
    mutated_names = [order[i] for i in mutated]
    return _Plan(qualname, namespace, name, [(n, p["index"]) for n, p in zip(names, input_params)], out,
                 mutated_names, schema, order)


def _closest(word, names):
    from . import _kjit
    return _kjit.closest_names(word, list(names)) if names else []


def kernel_signature(params):
    return ", ".join(f"{p['type']} {p['source_name'] or p['name']}" for p in params)


def schema(kernel, qualname=None, outputs=None, mutates=(), grid=None, block=None):
    """The schema kjit.torch.op registers for `kernel` (a kjit kernel or a KernelSignature), without
    registering anything or importing torch: "square(Tensor matrix, SymInt width, SymInt height) -> Tensor"
    (an integer is SymInt, torch's int that torch.compile may make symbolic). Without qualname, the op
    is named after the kernel ("kjit::square")."""
    if qualname is None:
        qualname = "kjit::" + _op_name(kernel)
    return _plan(kernel, qualname, outputs, mutates, _callables(outputs, grid, block)).schema


def _op_name(kernel):
    """An identifier from a kernel's name: "scale<float, 4>" -> "scale_float_4"."""
    name = getattr(kernel, "kernel", None) or getattr(kernel, "name", None) or "kernel"
    ident = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    while "__" in ident:
        ident = ident.replace("__", "_")
    return ident if ident and not ident[0].isdigit() else "k_" + ident


def _callables(outputs, grid, block):
    found = [(f"outputs[{k!r}]", f) for k, f in (outputs or {}).items() if callable(f)]
    for label, v in (("grid", grid), ("block", block)):
        if callable(v):
            found.append((label, v))
    return found


def _source(plan, dynamic_grid, dynamic_block, shared_mem_fn):
    """The implementations as Python source: one call per output, one launch, no loops."""
    inputs = ", ".join(n for n, _ in plan.inputs)
    lines = [f"def _impl({inputs}):"]
    for k, (n, _) in enumerate(plan.outputs):
        lines.append(f"    {n} = _out[{k}]({inputs})")
    grid = f"_grid({inputs})" if dynamic_grid else "_g"
    block = f"_block({inputs})" if dynamic_block else "_b"
    shared = f"_shared({inputs})" if shared_mem_fn else "_s"
    args = ", ".join(plan.order)
    if not dynamic_grid and not dynamic_block and not shared_mem_fn:
        lines.append(f"    _launch({args})")
    else:
        lines.append(f"    _kernel.launcher({grid}, {block}, {shared}, None, _strided)({args})")
    returns = ", ".join(n for n, _ in plan.outputs)
    lines.append(f"    return {returns}" if plan.outputs else "    return None")
    lines.append(f"def _fake({inputs}):")
    for k, (n, _) in enumerate(plan.outputs):
        lines.append(f"    {n} = _out[{k}]({inputs})")
    lines.append(f"    return {returns}" if plan.outputs else "    return None")
    return "\n".join(lines) + "\n"


def _host_refusal(kernel, plan, torch):
    """The op's CPU implementation: an ArgumentError naming the first tensor on the host."""
    def refuse(*args):
        signature = getattr(kernel, "signature", kernel)  # a kjit kernel's, read only when an op goes wrong
        for (name, index), value in zip(plan.inputs, args):
            if isinstance(value, torch.Tensor) and value.device.type != "cuda":
                given = f"a torch.Tensor on the host ({value.device}) for {name}"
                why = "kernels take device memory; move it with .cuda()"
                if hasattr(signature, "refuse"):
                    signature.refuse(index, given, why)
                raise ArgumentError(f"{plan.qualname}: parameter #{index} ({name}): given {given}: {why}")
        raise ArgumentError(f"{plan.qualname}: no CUDA tensor among the op's arguments: the op runs on CUDA tensors")
    return refuse


def op(kernel, qualname, *, grid, block, outputs=None, mutates=(), shared_mem=0, backward=None,
       setup_context=None, strided=False):
    """Registers `kernel` as the torch operator `qualname` ("mylib::square") and returns it
    (torch.ops.mylib.square.default): callable eagerly, traced by torch.compile, captured by CUDA graphs.

    grid, block, shared_mem: values, or functions of the op's inputs. outputs: {name: function of the
    inputs returning the new tensor} for the kernel's non-const pointers, by their source names (a
    name the kernel does not have is an error; a kernel loaded without its source takes them in
    order); it is also the fake implementation. mutates: the inputs the kernel writes (names or
    parameter indexes). backward, setup_context: as torch.library.register_autograd takes them.
    Each tensor is checked as a launch checks it (element type, device, a dense layout); strided=True:
    the kernel takes its tensors' strides itself, so non-contiguous ones pass."""
    import torch

    plan = _plan(kernel, qualname, outputs, mutates, _callables(outputs, grid, block))
    where = f"registering {qualname}"
    if qualname in _registered:
        raise UsageError(f"{where}: kjit registered an operator of this name already; each op is registered once "
                         "(keep the object kjit.torch.op returned)")
    identity = getattr(kernel, "_identity", id(kernel))  # one kernel of one loaded module, whichever handle
    if identity in _kernels:
        raise UsageError(f"{where}: kernel {kernel.name} is registered already as {_kernels[identity][0]}")
    try:
        getattr(getattr(torch.ops, plan.namespace), plan.name)
        exists = True
    except (AttributeError, RuntimeError):
        exists = False
    if exists:
        raise UsageError(f"{where}: torch has an operator of this name already")
    if setup_context is not None and backward is None:
        raise UsageError(f"{where}: setup_context is given without backward")
    for label, v in (("grid", grid), ("block", block)):
        if v is None:
            raise UsageError(f"{where}: {label}= is required")
    scope = {
        "_out": [outputs[k] for k in outputs] if outputs else [],
        "_kernel": kernel,
        "_grid": grid, "_block": block, "_shared": shared_mem,
        "_g": grid, "_b": block, "_s": shared_mem, "_strided": bool(strided),
    }
    if not callable(grid) and not callable(block) and not callable(shared_mem):
        scope["_launch"] = kernel.launcher(grid, block, shared_mem, None, bool(strided))
    exec(compile(_source(plan, callable(grid), callable(block), callable(shared_mem)), f"<kjit.torch {qualname}>",
                 "exec"), scope)
    lib = torch.library.Library(plan.namespace, "FRAGMENT")
    lib.define(plan.schema)
    lib.impl(plan.name, scope["_impl"], "CUDA")
    lib.impl(plan.name, _host_refusal(kernel, plan, torch), "CPU")  # kjit's error, not torch's "no CPU backend"
    torch.library.register_fake(qualname, scope["_fake"], lib=lib)
    if backward is not None:
        torch.library.register_autograd(qualname, backward, setup_context=setup_context, lib=lib)
    _registered[qualname] = lib
    _kernels[identity] = (qualname, kernel)
    return getattr(getattr(torch.ops, plan.namespace), plan.name).default
