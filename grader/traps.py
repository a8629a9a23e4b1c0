"""Forbid rules enforced at run time: a trap on every forbidden callable (issue 11, finding 7).

The syntax-tree check (forbid.py) sees names, not what code calls, so a Tensor method
(``x.as_strided``), the defining submodule (``from torch.nn.utils.clip_grad import ...``), an alias
by assignment (``t = torch``) or a private binding (``torch._C._nn.scaled_dot_product_attention``)
reached a forbidden function. Here, in the sandboxed process, after isolation and before the
submission loads, the runner replaces each forbidden callable by a trap at every place it is
reachable from:

- every module in ``sys.modules`` whose namespace holds the object (the public name, the defining
  submodule, every re-export, ``torch._C._nn`` for the functional bindings);
- ``torch.Tensor``'s method of the same name, for a torch binding (a C function, one aten op);
- the bindings a thin Python wrapper calls under its own name (``F.layer_norm`` calls
  ``torch.layer_norm``, ``F.cross_entropy`` calls ``torch._C._nn.cross_entropy_loss``);
- a forbidden class is trapped in its ``__init__`` (so every alias and every subclass is caught,
  and ``isinstance`` keeps working); a forbidden module has each of its public callables trapped.

A trap called directly by the submission's code writes a "forbidden" frame to the result
channel at once, before it returns control to the submission, and raises ForbiddenCall; the
zygote rejects the run. Calls made by check code or by torch for itself are not the submission's
and pass through. What stays best effort is documented in README.md ("Known limits").
"""

from __future__ import annotations

import contextlib
import ctypes
import dis
import gc
import importlib
import os
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

import torch

from grader import forbid, frames

# Code from these directories (the installed packages, the standard library, the grader) and check
# code is not the submission's: a call it makes for itself is not counted.
_TRUSTED_PREFIXES = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (os.path.dirname(torch.__file__), os.__file__, __file__)
)
_TRUSTED_NAMES = frozenset({"<check>", "<compare>"})
_BINDING_OWNERS = ("torch", "torch._C._nn", "torch._C._special", "torch._C._linalg")


class ForbiddenCall(Exception):  # noqa: N818 - the name the learner reads
    """Raised in the sandbox when the submission calls what the exercise forbids."""


def _resolve(rule: str) -> Any:
    """The object a dotted rule names, importing its module if needed; None if there is none."""
    parts = forbid.canonical(rule).split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: S112 - not a module at this length: try a shorter one
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return None
        return obj
    return None


def _bindings(function: Any, name: str) -> list[Any]:
    """The torch bindings a thin Python wrapper calls under (a name starting with) its own
    name: ``torch.layer_norm`` for ``F.layer_norm``. Attribute loads only: ``F.unfold`` names
    itself for torch-function dispatch but calls ``im2col``, not ``Tensor.unfold``."""
    found = []
    while isinstance(function, types.FunctionType):
        for instruction in dis.get_instructions(function):
            attr = instruction.argval
            if (
                instruction.opname in ("LOAD_ATTR", "LOAD_METHOD")
                and isinstance(attr, str)
                and attr.startswith(name)
            ):
                for owner in _BINDING_OWNERS:
                    module = sys.modules.get(owner)
                    target = getattr(module, attr, None) if module else None
                    if callable(target) and not isinstance(target, type):
                        found.append(target)
        function = getattr(function, "__wrapped__", None)
    return found


def _caller_line() -> tuple[bool, int | None]:
    """Whether the trap's direct caller is submitted code (anything but torch's, the standard
    library's, the grader's or the checks' code, however it was compiled), and its line in
    submission.py. Only direct calls count: torch calling a forbidden function for itself
    (F.mse_loss calls torch.broadcast_tensors) is not the learner using it."""
    frame = sys._getframe(2)
    filename = frame.f_code.co_filename
    if (
        filename in _TRUSTED_NAMES
        or filename.startswith(_TRUSTED_PREFIXES)
        or filename.startswith("<frozen ")  # runpy, importlib: the standard library
    ):
        return False, None
    return True, frame.f_lineno if filename == "submission.py" else None


def _forbidden(rule: str, fd: int, sent: set[str], line: int | None) -> NoReturn:
    if rule not in sent:  # one frame per rule: a loop of calls must not flood the channel
        sent.add(rule)
        frames.write(fd, {"kind": "forbidden", "rule": rule, "line": line})
    raise ForbiddenCall(f"{rule} is forbidden in this exercise")


def _trap(
    original: Callable[..., Any],
    rule: str,
    fd: int,
    sent: set[str],
    made: weakref.WeakSet[Any] | None = None,
) -> Callable[..., Any]:
    def trap(*args: Any, **kwargs: Any) -> Any:
        submitted, line = _caller_line()
        if not submitted:
            if made is not None and args:  # a forbidden class's __init__ run by trusted code
                with contextlib.suppress(TypeError):
                    made.add(args[0])
            return original(*args, **kwargs)
        _forbidden(rule, fd, sent, line)

    _copy_names(trap, original)
    return trap


def _guard(
    method: Callable[..., Any], rule: str, fd: int, sent: set[str], made: weakref.WeakSet[Any]
) -> Callable[..., Any]:
    """A forbidden class's own method, refused on an instance its trapped ``__init__`` did not
    build: ``cls.__new__(cls)`` (or copy, pickle) skips ``__init__``, and ``nn.Module.__call__``,
    torch's own code, would then run ``forward`` as a trusted caller."""

    def guard(*args: Any, **kwargs: Any) -> Any:
        if args:
            try:
                known = args[0] in made
            except TypeError:
                known = False
            if not known and not isinstance(args[0], type):
                _forbidden(rule, fd, sent, None)
        return method(*args, **kwargs)

    _copy_names(guard, method)
    return guard


def _copy_names(wrapper: Callable[..., Any], original: Callable[..., Any]) -> None:
    # No functools.wraps: it would set __wrapped__, a way back to the original.
    for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
        with contextlib.suppress(AttributeError, TypeError):
            setattr(wrapper, attribute, getattr(original, attribute))


def arm(rules: list[str], fd: int) -> list[str]:
    """Trap every forbidden callable; the rules that got at least one trap."""
    sent: set[str] = set()
    replace: dict[int, Callable[..., Any]] = {}  # id of a forbidden object -> its trap
    keep: list[Any] = []  # the originals stay alive, so their ids stay unique
    armed: list[str] = []
    tensor_methods: dict[str, Callable[..., Any]] = {}
    base_methods: dict[str, Callable[..., Any]] = {}
    for rule in rules:
        obj = _resolve(rule)
        if obj is None:
            continue
        if isinstance(obj, types.ModuleType):
            prefix = obj.__name__
            members = [
                value
                for key, value in vars(obj).items()
                if not key.startswith("_")
                and callable(value)
                and (getattr(value, "__module__", None) or "").startswith(prefix.split(".")[0])
            ]
        else:
            members = [obj]
        for member in members:
            if isinstance(member, type):
                init = member.__dict__.get("__init__")
                if init is not None and id(init) not in replace:
                    made: weakref.WeakSet[Any] = weakref.WeakSet()
                    trap = _trap(init, rule, fd, sent, made)
                    try:
                        setattr(member, "__init__", trap)  # noqa: B010 - mypy refuses the plain form
                    except TypeError:  # an immutable extension type: the static check only
                        continue
                    replace[id(init)] = trap
                    keep.append(init)
                    for key, method in list(vars(member).items()):
                        if key != "__init__" and isinstance(method, types.FunctionType):
                            setattr(member, key, _guard(method, rule, fd, sent, made))
                continue
            targets = [member, *_bindings(member, rule.rpartition(".")[2])]
            for target in targets:
                if id(target) not in replace:
                    replace[id(target)] = _trap(target, rule, fd, sent)
                    keep.append(target)
                name = getattr(target, "__name__", None)
                # A torch binding (a C function, one aten op) and the Tensor method of the same
                # name are the same op; a Python function that shares a method's name need not be
                # (torch.distributed.scatter is not Tensor.scatter).
                if (
                    isinstance(target, types.BuiltinFunctionType)
                    and isinstance(name, str)
                    and not name.startswith("_")
                    and isinstance(getattr(torch.Tensor, name, None), types.MethodDescriptorType)
                ):
                    tensor_methods[name] = _trap(getattr(torch.Tensor, name), rule, fd, sent)
                    own = vars(torch._C.TensorBase).get(name)
                    if own is not None:  # not a Python override in torch.Tensor: no recursion
                        base_methods[name] = _trap(own, rule, fd, sent)
        armed.append(rule)
    if not _INDEX:
        index()
    for obj in keep:
        for module_name, key in _INDEX.get(id(obj), ()):
            namespace = getattr(sys.modules.get(module_name), "__dict__", None)
            if isinstance(namespace, dict) and namespace.get(key) is obj:
                namespace[key] = replace[id(obj)]
    # Modules imported since the index was built (a rule's module, imported above). Comparing
    # the count first: building the set touches every module name, ~10 ms of copy-on-write.
    if len(sys.modules) != len(_INDEXED):
        for module_name in set(sys.modules) - _INDEXED:
            _replace_in(sys.modules[module_name], replace)
    for name, trap in tensor_methods.items():
        setattr(torch.Tensor, name, trap)
    if base_methods:
        _set_on_immutable(torch._C.TensorBase, base_methods)
    _KEEP.extend(keep)
    return armed


def _set_on_immutable(cls: type, attributes: dict[str, Callable[..., Any]]) -> None:
    """Set methods on a C type that refuses setattr (TensorBase, which ``super(torch.Tensor, x)``
    and ``type(x).__mro__`` reach without naming ``torch._C``): through the dict its mapping proxy
    wraps, then the call CPython requires after a type's dict changes (its method cache)."""
    referents = gc.get_referents(cls.__dict__)
    if len(referents) != 1 or not isinstance(referents[0], dict):
        return
    referents[0].update(attributes)
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def _replace_in(module: Any, replace: dict[int, Callable[..., Any]]) -> None:
    namespace = getattr(module, "__dict__", None)
    if isinstance(namespace, dict):
        for key, value in list(namespace.items()):
            found = replace.get(id(value))
            if found is not None:
                namespace[key] = found


_KEEP: list[Any] = []
_INDEX: dict[int, list[tuple[str, str]]] = {}  # id of a callable -> (module, name) holding it
_INDEXED: set[str] = set()


def index() -> None:
    """Where every callable in a loaded module is held, built once in the zygote before the fork
    server forks (so every sandbox inherits it). Walking every module's namespace in each run
    would touch the reference count of ~80,000 objects, and copy-on-write would then copy the
    pages that hold them: ~100 ms a run instead of a few."""
    _INDEX.clear()
    _INDEXED.clear()
    for module_name, module in list(sys.modules.items()):
        _INDEXED.add(module_name)
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if callable(value) and not isinstance(value, types.ModuleType):
                _INDEX.setdefault(id(value), []).append((module_name, key))
