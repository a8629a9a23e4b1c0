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

import ast
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
from dataclasses import dataclass, field
from typing import Any, NoReturn

import torch

from grader import forbid, frames

# Code from these directories (the installed packages, the standard library, the grader) is
# library code: a forbidden call it makes for itself is not the learner's. Check code is not in
# that list (issue 24, finding 1): it calls the learner's names, so what it reaches through them is
# the learner's call; what it needs of a forbidden function goes through a handle (bind_checks).
_LIBRARY_PREFIXES = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (os.path.dirname(torch.__file__), os.__file__, __file__)
)
_BINDING_OWNERS = ("torch", "torch._C._nn", "torch._C._special", "torch._C._linalg")
HELPERS = ("torch", "nn", "F")  # the names check code reaches torch by (runner.py)


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


@dataclass
class _Rules:
    """What every trap of one run shares. Holds no original: those live only in the closures of
    their traps and handles (there is no module-level list of them to import)."""

    fd: int
    sent: set[str] = field(default_factory=set)
    # (file, first line, name) of every forbidden Python function and forbidden class's method:
    # a frame running such code that was not entered through its trap is a copy (compiled from
    # torch's source) or an original reached around the trap, and counts as the call itself.
    keys: set[tuple[str, int, str]] = field(default_factory=set)
    # The code of the trap, guard and handle wrappers: a frame running one was already decided.
    vetted: set[types.CodeType] = field(default_factory=set)
    # The files those keys are in, each with its rule: code of one executed after arming is a
    # copy of a forbidden function's module (its loader run again, a reload), which no trap sees.
    files: dict[str, str] = field(default_factory=dict)

    def add_keys(self, keys: set[tuple[str, int, str]], rule: str) -> None:
        self.keys |= keys
        for filename, _, _ in keys:
            self.files.setdefault(filename, rule)

    def forbid(self, rule: str, line: int | None) -> NoReturn:
        if rule not in self.sent:  # one frame per rule: a loop of calls must not flood the channel
            self.sent.add(rule)
            frames.write(self.fd, {"kind": "forbidden", "rule": rule, "line": line})
        raise ForbiddenCall(f"{rule} is forbidden in this exercise")


def _key(code: types.CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _library_file(filename: Any) -> bool:
    return isinstance(filename, str) and (
        filename.startswith(_LIBRARY_PREFIXES) or filename.startswith("<frozen ")
    )


def _library(frame: types.FrameType) -> bool:
    """Whether ``frame`` runs torch's, the standard library's or the grader's own code: under
    their file names *and* in the namespace of a module loaded before the submission (held in
    `_GENUINE` since then), or of one the import system loaded since, whose code is the code
    its file compiles to. Neither the file name nor ``sys.modules`` decides alone: the
    submission can register a module of its own making under any name, with code compiled
    under a library's file name (the "fake library" forgery)."""
    code = frame.f_code
    if not _library_file(code.co_filename):
        return False
    namespace = frame.f_globals
    if _GENUINE.get(id(namespace)) is namespace:
        return True
    # Imported after the submission started (torch imports lazily): a name the process did not
    # hold then, whose module's namespace this is, running its own file's code.
    name = namespace.get("__name__")
    if not isinstance(name, str) or name in _INDEXED or name in _BEFORE:
        return False
    module = sys.modules.get(name)
    return getattr(module, "__dict__", None) is namespace and _from_its_file(code)


_COMPILED: dict[str, frozenset[tuple[int, str, bytes]]] = {}


def _from_its_file(code: types.CodeType) -> bool:
    """Whether ``code`` is one that compiling its own file gives (first line, name, bytecode)."""
    filename = code.co_filename
    if filename not in _COMPILED:
        found: set[tuple[int, str, bytes]] = set()
        try:
            with open(filename, "rb") as handle:
                pending = [compile(handle.read(), filename, "exec", dont_inherit=True)]
        except (OSError, SyntaxError, ValueError):
            pending = []
        while pending:
            item = pending.pop()
            found.add((item.co_firstlineno, item.co_name, item.co_code))
            pending += [c for c in item.co_consts if isinstance(c, types.CodeType)]
        _COMPILED[filename] = frozenset(found)
    return (code.co_firstlineno, code.co_name, code.co_code) in _COMPILED[filename]


def _handed_in(frame: types.FrameType, target: Any) -> bool:
    """Whether library code calls ``target`` because it was handed it (``torch.vmap(f)``, a
    ``functools.partial`` of it), rather than naming it for itself (F.mse_loss calls
    torch.broadcast_tensors)."""
    try:
        held = list(frame.f_locals.values())
    except Exception:  # noqa: BLE001 - a frame whose locals cannot be read: assume the worst
        return True
    for value in held:
        if value is target:
            return True
        with contextlib.suppress(Exception):
            if any(inner is target for inner in gc.get_referents(value)):
                return True
    return False


def _learners(rules: _Rules, frame: types.FrameType | None, target: Any) -> tuple[bool, int | None]:
    """Whether a trap reached from ``frame`` (its direct caller) is the learner's call, and the
    line in submission.py when it is.

    Walks outward to the nearest frame that is not library code: learner code, or check code
    (which reaches a trap only through a name the learner bound). Library frames in between make
    it torch's own call (F.mse_loss calling torch.broadcast_tensors), unless the library code was
    handed the forbidden function, or one of them runs a forbidden function's code that was not
    entered through its trap. A trap, guard or handle frame on the way already decided the rest.
    """
    direct, suspect = True, False
    while frame is not None:
        if frame.f_code in rules.vetted:
            return suspect, None
        if not _library(frame):
            line = frame.f_lineno if frame.f_code.co_filename == "submission.py" else None
            return direct or suspect, line
        if direct and _handed_in(frame, target):
            suspect = True
        parent = frame.f_back
        entered = parent is not None and parent.f_code in rules.vetted
        if not entered and _key(frame.f_code) in rules.keys:
            suspect = True
        direct = False
        frame = parent
    return suspect, None


def _trap(
    original: Callable[..., Any],
    rule: str,
    rules: _Rules,
    made: weakref.WeakSet[Any] | None = None,
) -> Callable[..., Any]:
    def trap(*args: Any, **kwargs: Any) -> Any:
        learners, line = _learners(rules, sys._getframe(1), trap)
        if learners:
            rules.forbid(rule, line)
        if made is not None and args:  # a forbidden class's __init__, run by library code
            with contextlib.suppress(TypeError):
                made.add(args[0])
        return original(*args, **kwargs)

    _copy_names(trap, original)
    rules.vetted.add(trap.__code__)
    return trap


def _guard(
    method: Callable[..., Any], rule: str, rules: _Rules, made: weakref.WeakSet[Any]
) -> Callable[..., Any]:
    """A forbidden class's own method, refused on an instance its trapped ``__init__`` did not
    build: ``cls.__new__(cls)`` (or copy, pickle) skips ``__init__``, and ``nn.Module.__call__``,
    torch's own code, would then run ``forward`` as library code."""

    def guard(*args: Any, **kwargs: Any) -> Any:
        if args:
            try:
                known = args[0] in made
            except TypeError:
                known = False
            if not known and not isinstance(args[0], type):
                rules.forbid(rule, None)
        return method(*args, **kwargs)

    _copy_names(guard, method)
    rules.vetted.add(guard.__code__)
    return guard


def _copy_names(wrapper: Callable[..., Any], original: Callable[..., Any]) -> None:
    # No functools.wraps: it would set __wrapped__, a way back to the original.
    for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
        with contextlib.suppress(AttributeError, TypeError):
            setattr(wrapper, attribute, getattr(original, attribute))


def _function_keys(function: Any) -> set[tuple[str, int, str]]:
    keys = set()
    while isinstance(function, types.FunctionType):
        keys.add(_key(function.__code__))
        function = getattr(function, "__wrapped__", None)
    return keys


class Handles:
    """What check code may call of a forbidden function: handles bound before the submission
    loads (issue 24, finding 1). Built by arm(); ``bind`` rewrites a check's source so that its
    own references to forbidden functions (``F.scaled_dot_product_attention``), its constructions
    of forbidden classes (``nn.LSTM(...)``) and its calls of trapped Tensor methods
    (``x.as_strided(...)``) go through a handle. A handle runs the original only for a caller
    whose nearest non-library frame is the check's own compiled code; any other caller (a
    learner who found one in a check's namespace) is the learner calling the forbidden function.
    """

    def __init__(self, rules: _Rules) -> None:
        self._rules = rules
        self._functions: dict[int, tuple[Callable[..., Any], str]] = {}  # trap id -> original
        self._classes: dict[int, str] = {}  # id of a forbidden class -> its rule
        self._methods: dict[str, tuple[Callable[..., Any], Callable[..., Any], str]] = {}
        # Every attribute name a forbidden callable is held under: a check whose source names
        # none of them needs no handle, and is compiled as it is (rewriting costs milliseconds).
        self.names: set[str] = set()

    def needed(self, source: str) -> bool:
        return any(name in source for name in self.names)

    def _add_function(self, trap: Callable[..., Any], original: Callable[..., Any], rule: str):
        self._functions[id(trap)] = (original, rule)

    def bind(
        self, tree: ast.AST, helpers: dict[str, Any], wanted: list[tuple[str, Any]]
    ) -> ast.AST:
        """``tree`` (a check's code or compare expression) with handles' names in place; what
        ``make`` is to bind to those names is appended to ``wanted``."""

        def name_for(kind: str, what: Any, where: ast.AST) -> ast.Name:
            name = f"__forbidden_{len(wanted)}"
            wanted.append((kind, what))
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), where)

        def resolve(node: ast.AST) -> Any:
            try:
                dotted = forbid._dotted(node)
            except forbid.TooDeep:
                return None
            if dotted is None:
                return None
            head, *rest = dotted.split(".")
            if head not in HELPERS:
                return None
            obj = helpers[head]
            try:
                for part in rest:
                    obj = getattr(obj, part)
            except Exception:  # noqa: BLE001 - not a torch name: left as it is
                return None
            return obj

        handles = self

        class Rewrite(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802 - ast's spelling
                func = node.func
                target = resolve(func) if isinstance(func, ast.Attribute | ast.Name) else None
                if isinstance(target, type) and id(target) in handles._classes:
                    node.func = name_for("class", target, func)
                elif (
                    target is None
                    and isinstance(func, ast.Attribute)
                    and func.attr in handles._methods
                ):
                    receiver = self.visit(func.value)
                    node.func = name_for("method", func.attr, func)
                    node.args = [receiver, *node.args]
                    node.args[1:] = [self.visit(arg) for arg in node.args[1:]]
                    node.keywords = [self.visit(keyword) for keyword in node.keywords]
                    return node
                return self.generic_visit(node)

            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # noqa: N802
                if isinstance(node.ctx, ast.Load) and id(resolve(node)) in handles._functions:
                    return name_for("function", resolve(node), node)
                return self.generic_visit(node)

        return Rewrite().visit(tree)  # every new node has its location: none to fix

    def make(
        self, wanted: list[tuple[str, Any]], codes: set[types.CodeType]
    ) -> dict[str, Callable[..., Any]]:
        """The handles ``bind`` asked for, by name, each accepting calls from ``codes`` only."""
        return {
            f"__forbidden_{index}": self._handle(kind, what, codes)
            for index, (kind, what) in enumerate(wanted)
        }

    def _handle(self, kind: str, what: Any, codes: set[types.CodeType]) -> Callable[..., Any]:
        rules = self._rules
        if kind == "function":
            original, rule = self._functions[id(what)]
        elif kind == "class":
            original, rule = what, self._classes[id(what)]
        else:
            method, trap, rule = self._methods[what]
            name = what

            def original(receiver: Any, *args: Any, **kwargs: Any) -> Any:
                if getattr(type(receiver), name, None) is trap:  # a tensor: torch's own method
                    return method(receiver, *args, **kwargs)
                return getattr(receiver, name)(*args, **kwargs)

        def handle(*args: Any, **kwargs: Any) -> Any:
            frame: types.FrameType | None = sys._getframe(1)
            while frame is not None and _library(frame) and frame.f_code not in codes:
                frame = frame.f_back
            if frame is None:
                rules.forbid(rule, None)
            if frame.f_code not in codes:
                learner = frame.f_code.co_filename == "submission.py"
                rules.forbid(rule, frame.f_lineno if learner else None)
            return original(*args, **kwargs)

        rules.vetted.add(handle.__code__)
        return handle


def arm(rules: list[str], fd: int) -> tuple[list[str], Handles]:
    """Trap every forbidden callable; the rules that got at least one trap, and the handles
    check code uses instead."""
    shared = _Rules(fd)
    handles = Handles(shared)
    replace: dict[int, Callable[..., Any]] = {}  # id of a forbidden object -> its trap
    originals: list[Any] = []  # alive until arm returns (the traps' closures keep them after)
    armed: list[str] = []
    members_seen: list[Any] = []
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
            members_seen.append(member)
            if isinstance(member, type):
                init = member.__dict__.get("__init__")
                if init is not None and id(init) not in replace:
                    made: weakref.WeakSet[Any] = weakref.WeakSet()
                    trap = _trap(init, rule, shared, made)
                    try:
                        setattr(member, "__init__", trap)  # noqa: B010 - mypy refuses the plain form
                    except TypeError:  # an immutable extension type: the static check only
                        continue
                    replace[id(init)] = trap
                    originals.append(init)
                    handles._classes[id(member)] = rule
                    for key, method in list(vars(member).items()):
                        shared.add_keys(_function_keys(method), rule)
                        if key != "__init__" and isinstance(method, types.FunctionType):
                            setattr(member, key, _guard(method, rule, shared, made))
                continue
            targets = [member, *_bindings(member, rule.rpartition(".")[2])]
            for target in targets:
                shared.add_keys(_function_keys(target), rule)
                if id(target) not in replace:
                    replace[id(target)] = _trap(target, rule, shared)
                    originals.append(target)
                    handles._add_function(replace[id(target)], target, rule)
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
                    method = getattr(torch.Tensor, name)
                    tensor_methods[name] = _trap(method, rule, shared)
                    handles._methods[name] = (method, tensor_methods[name], rule)
                    own = vars(torch._C.TensorBase).get(name)
                    if own is not None:  # not a Python override in torch.Tensor: no recursion
                        base_methods[name] = _trap(own, rule, shared)
        armed.append(rule)
    if not _INDEX:
        index()
    handles.names |= {rule.rpartition(".")[2] for rule in rules} | set(handles._methods)
    handles.names |= {key for cls in members_seen for module_name, key in _INDEX.get(id(cls), ())}
    for obj in originals:
        for module_name, key in _INDEX.get(id(obj), ()):
            handles.names.add(key)
            namespace = getattr(sys.modules.get(module_name), "__dict__", None)
            if isinstance(namespace, dict) and namespace.get(key) is obj:
                namespace[key] = replace[id(obj)]
    # Modules imported since the index was built (a rule's module, imported above). Comparing
    # the count first: building the set touches every module name, ~10 ms of copy-on-write.
    if len(sys.modules) != len(_INDEXED):
        for module_name in set(sys.modules) - _INDEXED:
            _replace_in(sys.modules[module_name], replace)
            _BEFORE.add(module_name)
            _keep(sys.modules[module_name])
    for name, trap in tensor_methods.items():
        setattr(torch.Tensor, name, trap)
    if base_methods:
        _set_on_immutable(torch._C.TensorBase, base_methods)
    sys.addaudithook(_audit(shared))
    return armed, handles


class ForgedLibraryCode(RuntimeError):
    """Raised in the sandbox when the submission makes code pass for torch's or the standard
    library's own (see `_audit`)."""


def _audit(rules: _Rules) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit hook, for the rest of the run (no code can remove one), that sees what no trap
    is on the way of:

    - code from a forbidden function's file compiled or executed again (a copy of its module
      through the module's loader, from its source, or a reload): the call itself, reported as
      the rule's;
    - code the submission makes under a library's file name (compiled from other source, built
      as a code object, or unmarshalled), and ctypes, which rewrites memory: refused, so that
      frames that pass for library code are library code. Library code doing so for itself
      (torch compiling what it generates) is not refused.
    """
    files = rules.files

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "exec":
            code = args[0] if args else None
            if isinstance(code, types.CodeType) and code.co_filename in files:
                rules.forbid(files[code.co_filename], _submission_line())
        elif event == "compile":
            if len(args) > 1 and _library_file(args[1]) and not _library(sys._getframe(1)):
                if args[1] in files:  # a forbidden function's module compiled again: a copy
                    rules.forbid(files[args[1]], _submission_line())
                if not _is_its_source(args[0], args[1]):
                    raise ForgedLibraryCode(f"code compiled under the file name {args[1]}")
        elif event == "code.__new__":
            if len(args) > 1 and _library_file(args[1]) and not _library(sys._getframe(1)):
                raise ForgedLibraryCode(f"a code object made under the file name {args[1]}")
        elif (event == "marshal.loads" or event.startswith("ctypes.")) and not _library(
            sys._getframe(1)
        ):
            raise ForgedLibraryCode(f"{event} is not available to submissions here")

    return hook


def _is_its_source(source: Any, filename: str) -> bool:
    """Whether ``source`` is the text of the file it is compiled under."""
    if isinstance(source, str):
        source = source.encode()
    if not isinstance(source, bytes | bytearray | memoryview):
        return False
    try:
        with open(filename, "rb") as handle:
            return handle.read() == bytes(source)
    except OSError:
        return False


def _submission_line() -> int | None:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == "submission.py":
            return frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


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


_INDEX: dict[int, list[tuple[str, str]]] = {}  # id of a callable -> (module, name) holding it
_INDEXED: set[str] = set()
# The namespaces of the modules loaded before the submission (id -> the dict itself, kept alive so
# that no dict of the submission's making can take its id), and the names of those loaded between
# index() and arm().
_GENUINE: dict[int, dict[str, Any]] = {}
_BEFORE: set[str] = set()


def _keep(module: Any) -> None:
    namespace = getattr(module, "__dict__", None)
    if isinstance(namespace, dict):
        _GENUINE[id(namespace)] = namespace


def index() -> None:
    """Where every callable in a loaded module is held, built once in the zygote before the fork
    server forks (so every sandbox inherits it). Walking every module's namespace in each run
    would touch the reference count of ~80,000 objects, and copy-on-write would then copy the
    pages that hold them: ~100 ms a run instead of a few."""
    _INDEX.clear()
    _INDEXED.clear()
    _GENUINE.clear()
    _BEFORE.clear()
    for module_name, module in list(sys.modules.items()):
        _INDEXED.add(module_name)
        _keep(module)
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if callable(value) and not isinstance(value, types.ModuleType):
                _INDEX.setdefault(id(value), []).append((module_name, key))
