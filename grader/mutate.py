"""Mechanical mutants of a reference solution, for mutation testing of an exercise (issue 23).

Pure syntax-tree work, standard library only: ``mutants(source)`` returns every mutant the
operators below derive, each a whole module's source with a stable id. ``verify_bank`` grades
each one as a submission; a check suite that lets a mutant pass has a hole (or the mutant is
equivalent to the reference, and ``exercise.yaml`` waives it with the reason).

Ids are ``<operator>:<line>:<n>`` (the n-th site of that operator on that line of the reference,
from 1), so they survive edits elsewhere in the file; ``float32:<function>`` for the wrapper.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

OPERATORS = (
    "mean-sum",  # reduction mean <-> sum (methods, torch.* and reduction="...")
    "dim",  # the dim of a reduction changed
    "keepdim",  # keepdim=True dropped
    "range",  # off by one at the end of a range()
    "slice",  # off by one at a bound of a slice
    "compare",  # < <-> <=, > <-> >=
    "eps-dropped",  # `+ eps` removed
    "eps-moved",  # sqrt(v + eps) -> sqrt(v) + eps (also rsqrt, log)
    "float32",  # a function's float64 inputs (also in lists, tuples, dicts) computed in float32
    "detach-removed",  # .detach() removed
    "no-grad-removed",  # `with torch.no_grad():` / inference_mode removed (its body kept)
    "detach-added",  # a function's returned tensors detached
    "inplace",  # an out-of-place method made in place (mutates its input)
    "mode-not-restored",  # a .train(...)/.eval() call or a `.training = ...` removed
    "copy-removed",  # .clone() / copy.deepcopy(x) / .copy() removed
    "argmax-last",  # argmax picks the last of tied maxima instead of the first
)

_REDUCTIONS = {"mean": "sum", "sum": "mean", "nanmean": "nansum", "nansum": "nanmean"}
_DIM_METHODS = {
    "sum", "mean", "softmax", "log_softmax", "logsumexp", "max", "min", "amax", "amin",
    "argmax", "argmin", "cumsum", "norm", "var", "std", "prod", "all", "any", "topk",
}  # fmt: skip
_INPLACE = {
    "add", "sub", "mul", "div", "clamp", "clamp_min", "clamp_max", "exp", "log", "sqrt",
    "neg", "abs", "sigmoid", "tanh", "relu", "pow", "masked_fill", "fill", "zero",
    "scatter", "index_fill", "addcmul", "addcdiv", "lerp",
}  # fmt: skip
_EPS_FUNCTIONS = {"sqrt", "rsqrt", "log"}
_COMPARE_FLIPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}

_PRELUDE = """
import torch as _mutant_torch


def _mutant_float32(fn):
    import functools

    def down(v):
        if isinstance(v, _mutant_torch.Tensor) and v.dtype == _mutant_torch.float64:
            return v.float(), True
        if type(v) in (tuple, list):
            moved = [down(x) for x in v]
            return type(v)(x for x, _ in moved), any(f for _, f in moved)
        if type(v) is dict:
            moved = {k: down(x) for k, x in v.items()}
            return {k: x for k, (x, _) in moved.items()}, any(f for _, f in moved.values())
        return v, False

    def up(v):
        if isinstance(v, _mutant_torch.Tensor) and v.dtype == _mutant_torch.float32:
            return v.double()
        if type(v) in (tuple, list):
            return type(v)(up(x) for x in v)
        if type(v) is dict:
            return {k: up(x) for k, x in v.items()}
        return v

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        moved = [down(a) for a in args]
        named = {k: down(v) for k, v in kwargs.items()}
        out = fn(*[a for a, _ in moved], **{k: v for k, (v, _) in named.items()})
        if any(f for _, f in moved) or any(f for _, f in named.values()):
            return up(out)
        return out

    return wrapper


def _mutant_probe(fn):
    import functools

    def floating(v):
        if isinstance(v, _mutant_torch.Tensor):
            return v.is_floating_point()
        if type(v) in (tuple, list):
            return any(floating(x) for x in v)
        if type(v) is dict:
            return any(floating(x) for x in v.values())
        return False

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if any(floating(v) for v in (*args, *kwargs.values())):
            raise RuntimeError("mutation probe: a floating-point tensor reached this function")
        return fn(*args, **kwargs)

    return wrapper


def _mutant_detach(v):
    if isinstance(v, _mutant_torch.Tensor):
        return v.detach()
    if type(v) in (tuple, list):
        return type(v)(_mutant_detach(x) for x in v)
    if type(v) is dict:
        return {k: _mutant_detach(x) for k, x in v.items()}
    return v


def _mutant_detach_probe(v):
    def floating(v):
        if isinstance(v, _mutant_torch.Tensor):
            return v.is_floating_point() or v.is_complex()
        if type(v) in (tuple, list):
            return any(floating(x) for x in v)
        if type(v) is dict:
            return any(floating(x) for x in v.values())
        return False

    if floating(v):
        raise RuntimeError("mutation probe: this function returned a floating-point tensor")
    return v
"""


@dataclass(frozen=True)
class Mutant:
    id: str
    operator: str
    line: int
    description: str
    source: str
    # For a `float32` mutant: the reference with the same function made to raise as soon as a
    # floating-point tensor reaches it; for a `detach-added` one, as soon as it returns one. If
    # that probe passes every check, the mutant never acts in any check (it casts only float
    # tensors, and detaches only tensors, of which an integer one tracks no gradient): it is the
    # reference itself, *inert*, not a hole of the checks (an integer, shape, float or
    # module-only contract). A function that does see or return a float tensor keeps its mutant
    # to kill (a float64 input, gen.grads) or to waive with the reason.
    probe: str | None = None


@dataclass(frozen=True)
class _Site:
    operator: str
    index: int  # the node's position in ast.walk order
    line: int
    description: str
    apply: Callable[[ast.AST], ast.AST | list[ast.stmt] | None]


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source`` (a module), in order of line; none equal to the original."""
    tree = ast.parse(source)
    original = ast.unparse(tree)
    sites = list(_sites(tree))
    found: list[Mutant] = []
    counts: dict[tuple[str, int], int] = {}
    for site in sorted(sites, key=lambda s: (s.line, s.index, s.operator)):
        key = (site.operator, site.line)
        counts[key] = counts.get(key, 0) + 1
        mutated = _apply(tree, site)
        if mutated is None:
            continue
        text = ast.unparse(mutated)
        if text == original:
            continue
        probe = None
        if site.operator in ("float32", "detach-added"):
            text = ast.unparse(_with_prelude(mutated))
            mutant_id = f"{site.operator}:{site.description.split()[0]}"
            # The probe of a wrapping operator: the same site, made to raise where the mutant
            # would act (Mutant.probe).
            probing = _decorate("_mutant_probe") if site.operator == "float32" else _probe_returns
            probed = _apply(tree, _Site(**{**vars(site), "apply": probing}))
            assert probed is not None
            probe = ast.unparse(_with_prelude(probed))
        else:
            mutant_id = f"{site.operator}:{site.line}:{counts[key]}"
        found.append(Mutant(mutant_id, site.operator, site.line, site.description, text, probe))
    return found


def _with_prelude(tree: ast.Module) -> ast.Module:
    """The helpers the wrapping operators call, after the docstring and __future__ imports."""
    body = tree.body
    at = 0
    while at < len(body) and (
        (isinstance(body[at], ast.ImportFrom) and body[at].module == "__future__")  # type: ignore[attr-defined]
        or (at == 0 and isinstance(body[at], ast.Expr) and isinstance(body[at].value, ast.Constant))  # type: ignore[attr-defined]
    ):
        at += 1
    tree.body = body[:at] + ast.parse(_PRELUDE).body + body[at:]
    return tree


def _apply(tree: ast.Module, site: _Site) -> ast.Module | None:
    copied = copy.deepcopy(tree)
    nodes = list(ast.walk(copied))
    target = nodes[site.index]
    replacement = site.apply(target)
    if replacement is None:
        return None
    if replacement is target:
        return ast.fix_missing_locations(copied)
    for parent in nodes:
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, replacement)
                return ast.fix_missing_locations(copied)
            if isinstance(value, list) and any(item is target for item in value):
                position = next(i for i, item in enumerate(value) if item is target)
                new = replacement if isinstance(replacement, list) else [replacement]
                value[position : position + 1] = new
                if not value and field in ("body", "orelse", "finalbody"):
                    value.append(ast.Pass())
                return ast.fix_missing_locations(copied)
    return None


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_method(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Attribute)


def _parameters(tree: ast.Module) -> dict[int, set[str]]:
    """For every node inside a function, by id(), the names of that function's parameters."""
    found: dict[int, set[str]] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.Lambda):
            arguments = function.args
            names = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
            for inner in ast.walk(function):
                found.setdefault(id(inner), set()).update(names)
    return found


def _sites(tree: ast.Module) -> Iterator[_Site]:  # noqa: C901 - one block per operator
    parameters = _parameters(tree)
    for index, node in enumerate(ast.walk(tree)):
        line = getattr(node, "lineno", 0)

        def site(
            op: str,
            what: str,
            fn: Callable[[ast.AST], object],
            index: int = index,
            line: int = line,
        ) -> _Site:
            return _Site(op, index, line, what, fn)  # type: ignore[arg-type]

        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name in _REDUCTIONS and isinstance(node.func, ast.Attribute):
                yield site("mean-sum", f".{name}() -> .{_REDUCTIONS[name]}()", _swap_reduction)
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg == "reduction" and getattr(value, "value", None) in ("mean", "sum"):
                    yield site("mean-sum", "reduction= swapped", _swap_reduction_keyword)
                if keyword.arg == "dim" and _int_constant(keyword.value) is not None:
                    yield site("dim", f"{name}(dim=...) changed", _change_dim_keyword)
                if keyword.arg == "keepdim" and _true(keyword.value):
                    yield site("keepdim", f"{name}(keepdim=True) dropped", _drop_keepdim)
                if keyword.arg == "eps":
                    yield site("eps-dropped", f"{name}(eps=...) dropped", _drop_eps_keyword)
            if (
                name in _DIM_METHODS
                and _is_method(node)
                and node.args
                and _int_constant(node.args[0]) is not None
                and name != "topk"
            ):
                yield site("dim", f".{name}(dim) changed", _change_dim_positional)
            if name == "range" and isinstance(node.func, ast.Name) and node.args:
                yield site("range", "range() end - 1", _range_end)
            if name in _EPS_FUNCTIONS and node.args and _adds_eps(node.args[0]):
                yield site("eps-moved", f"{name}(v + eps) -> {name}(v) + eps", _move_eps)
            if name == "detach" and _is_method(node) and not node.args:
                yield site("detach-removed", ".detach() removed", _drop_method_call)
            if name in ("clone", "copy") and _is_method(node) and not node.args:
                yield site("copy-removed", f".{name}() removed", _drop_method_call)
            if name == "deepcopy" and len(node.args) == 1:
                yield site("copy-removed", "deepcopy() removed", lambda n: n.args[0])  # type: ignore[attr-defined]
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            # In place on an input the caller passed (or on a module's own tensor): a copy
            # of a temporary would be an equivalent mutant.
            mutates_input = (
                isinstance(receiver, ast.Name) and receiver.id in parameters.get(id(node), ())
            ) or (isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name))
            if name in _INPLACE and mutates_input:
                yield site("inplace", f".{name}() -> .{name}_()", _make_inplace)
            if name == "argmax" and _is_method(node):
                yield site("argmax-last", ".argmax() -> last of ties", _argmax_last)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            if type(node.ops[0]) in _COMPARE_FLIPS:
                yield site("compare", "comparison flipped", _flip_compare)
        elif isinstance(node, ast.Slice):
            for bound in ("lower", "upper"):
                if getattr(node, bound) is not None:
                    yield site("slice", f"slice {bound} + 1", _slice_bound(bound))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_eps(node.right):
            yield site("eps-dropped", "+ eps dropped", lambda n: n.left)  # type: ignore[attr-defined]
        elif isinstance(node, ast.With) and any(_no_grad(item.context_expr) for item in node.items):
            yield site("no-grad-removed", "no_grad block removed", lambda n: list(n.body))  # type: ignore[attr-defined]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if _call_name(node.value) in ("train", "eval") and _is_method(node.value):
                yield site("mode-not-restored", f".{_call_name(node.value)}() removed", _remove)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "training" for t in node.targets
        ):
            yield site("mode-not-restored", ".training = ... removed", _remove)
        elif isinstance(node, ast.FunctionDef) and _wrappable(tree, node):
            yield site("float32", f"{node.name} in float32", _decorate("_mutant_float32"))
            if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node)):
                yield site("detach-added", f"{node.name} returns detached", _detach_returns)


def _wrappable(tree: ast.Module, node: ast.FunctionDef) -> bool:
    """Top-level functions and methods named forward."""
    return node in tree.body or node.name == "forward"


def _int_constant(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_eps(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return isinstance(name, str) and "eps" in name.lower()


def _adds_eps(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_eps(node.right)


def _no_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _call_name(node) in ("no_grad", "inference_mode")


def _new_dim(value: int) -> int:
    return {0: 1, 1: 0, -1: -2, -2: -1}.get(value, value - 1 if value > 0 else value + 1)


def _dim_node(value: int) -> ast.expr:
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))
    return ast.Constant(value)


def _swap_reduction(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    node.func.attr = _REDUCTIONS[node.func.attr]
    return node


def _swap_reduction_keyword(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    for keyword in node.keywords:
        if keyword.arg == "reduction" and isinstance(keyword.value, ast.Constant):
            keyword.value = ast.Constant("sum" if keyword.value.value == "mean" else "mean")
    return node


def _change_dim_keyword(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    for keyword in node.keywords:
        value = _int_constant(keyword.value) if keyword.arg == "dim" else None
        if value is not None:
            keyword.value = _dim_node(_new_dim(value))
    return node


def _change_dim_positional(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    value = _int_constant(node.args[0])
    assert value is not None
    node.args[0] = _dim_node(_new_dim(value))
    return node


def _drop_keepdim(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    node.keywords = [k for k in node.keywords if k.arg != "keepdim"]
    return node


def _drop_eps_keyword(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    node.keywords = [k for k in node.keywords if k.arg != "eps"]
    return node


def _range_end(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    last = 0 if len(node.args) == 1 else 1
    node.args[last] = ast.BinOp(left=node.args[last], op=ast.Sub(), right=ast.Constant(1))
    return node


def _move_eps(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call)
    inner = node.args[0]
    assert isinstance(inner, ast.BinOp)
    node.args[0] = inner.left
    return ast.BinOp(left=node, op=ast.Add(), right=inner.right)


def _drop_method_call(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    return node.func.value


def _make_inplace(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    node.func.attr += "_"
    return node


def _argmax_last(node: ast.AST) -> ast.AST:
    """x.argmax(d) -> (x.size(d) - 1 - x.flip(d).argmax(d)): the last maximum on ties."""
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    dim = (
        node.args[0]
        if node.args
        else next((k.value for k in node.keywords if k.arg == "dim"), None)
    )
    if dim is None:
        return node  # a flat argmax: no tie order to change cheaply; equal source, dropped
    target = node.func.value
    flipped = ast.Call(
        func=ast.Attribute(
            value=ast.Call(
                func=ast.Attribute(value=target, attr="flip", ctx=ast.Load()),
                args=[dim],
                keywords=[],
            ),
            attr="argmax",
            ctx=ast.Load(),
        ),
        args=[dim],
        keywords=[k for k in node.keywords if k.arg != "dim"],
    )
    size = ast.Call(
        func=ast.Attribute(value=target, attr="size", ctx=ast.Load()), args=[dim], keywords=[]
    )
    last = ast.BinOp(left=size, op=ast.Sub(), right=ast.Constant(1))
    return ast.BinOp(left=last, op=ast.Sub(), right=flipped)


def _flip_compare(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.Compare)
    node.ops = [_COMPARE_FLIPS[type(node.ops[0])]()]
    return node


def _slice_bound(bound: str) -> Callable[[ast.AST], ast.AST]:
    def apply(node: ast.AST) -> ast.AST:
        value = getattr(node, bound)
        setattr(node, bound, ast.BinOp(left=value, op=ast.Add(), right=ast.Constant(1)))
        return node

    return apply


def _remove(node: ast.AST) -> list[ast.stmt]:
    return []


def _decorate(name: str) -> Callable[[ast.AST], ast.AST]:
    def apply(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.FunctionDef)
        node.decorator_list.append(ast.Name(id=name, ctx=ast.Load()))
        return node

    return apply


def _detach_returns(node: ast.AST, helper: str = "_mutant_detach") -> ast.AST:
    assert isinstance(node, ast.FunctionDef)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Return) and inner.value is not None:
            inner.value = ast.Call(
                func=ast.Name(id=helper, ctx=ast.Load()), args=[inner.value], keywords=[]
            )
    return node


def _probe_returns(node: ast.AST) -> ast.AST:
    return _detach_returns(node, "_mutant_detach_probe")
