"""Structural rules: names a submission must not use, found on its syntax tree.

A rule such as ``nn.MultiheadAttention`` matches the name however it is reached:
``nn.MultiheadAttention``, ``torch.nn.MultiheadAttention``, ``from torch.nn import
MultiheadAttention [as M]``, ``import torch.nn as tnn; tnn.MultiheadAttention`` and
``getattr(nn, "MultiheadAttention")``. ``F`` and ``nn`` in a rule mean torch.nn.functional and
torch.nn, as in the exercises; a rule without a dot (``sorted``) matches that plain name only.
An alias by assignment (``t = torch``) is followed too. An exercise with any rule also forbids
PRIVATE: torch's private bindings reach the same kernels under other names, ``gc`` reaches
the originals behind traps.py's wrappers, and ``ctypes`` rewrites memory (traps.py's audit hook
refuses only some of its calls: ``memmove`` raises no audit event). This is an exercise rule,
not a security boundary: code that builds names at run time (eval, importlib) can evade it,
which is why the rules are also enforced at run time by traps.py, and the sandbox does not
depend on either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

MAX_CHAIN = 100  # attributes in one chain; deeper code is refused (see TooDeep)


class TooDeep(ValueError):  # noqa: N818 - the grader turns it into a sentence
    """An attribute chain longer than MAX_CHAIN: no real code has one, and checking every prefix
    of a chain thousands of levels deep would cost the trusted process quadratic time."""


PRIVATE = ("torch._C", "torch._VF", "torch.ops", "gc", "ctypes")

_CONVENTIONAL = {"F": "torch.nn.functional", "nn": "torch.nn", "np": "numpy"}


def canonical(name: str) -> str:
    """The full dotted name: ``F.x`` is ``torch.nn.functional.x``, ``nn.x`` is ``torch.nn.x``."""
    head, _, rest = name.partition(".")
    if head in _CONVENTIONAL:
        return _CONVENTIONAL[head] + ("." + rest if rest else "")
    return name


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes (or getattr with a literal name) on a plain name.

    Iterative: a chain thousands of levels deep must not exhaust the recursion limit.
    """
    parts: list[str] = []
    while True:
        if len(parts) > MAX_CHAIN:
            raise TooDeep(f"an attribute chain over {MAX_CHAIN} levels deep")
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            parts.append(node.args[1].value)
            node = node.args[0]
        else:
            return None


def _uses(tree: ast.AST) -> Iterable[tuple[str, int]]:
    """Every dotted name the code refers to or imports, with aliases resolved, and its line."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = full
                yield full, node.lineno
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value:
            # ``t = torch`` or ``sdpa = F.scaled_dot_product_attention``: t is an alias.
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = (
                _dotted(node.value) if isinstance(node.value, ast.Attribute | ast.Name) else None
            )
            if value is not None:
                head, _, rest = value.partition(".")
                full = aliases.get(head, head) + ("." + rest if rest else "")
                for target in targets:
                    if isinstance(target, ast.Name) and target.id != head:
                        aliases[target.id] = full
    for node in ast.walk(tree):
        dotted = _dotted(node) if isinstance(node, ast.Attribute | ast.Call) else None
        if dotted is None:
            if isinstance(node, ast.Name):
                dotted = node.id
            else:
                continue
        head, _, rest = dotted.partition(".")
        line = getattr(node, "lineno", 0)
        yield dotted, line
        if head in aliases:
            yield aliases[head] + ("." + rest if rest else ""), line


def _matches(used: str, rule: str) -> bool:
    canonical_rule = canonical(rule)
    for candidate in (used, canonical(used)):
        if candidate in (rule, canonical_rule):
            return True
        # "nn.X" also matches "torch.nn.X"; a bare rule ("sum") must not match "torch.sum".
        if "." in rule and candidate.endswith("." + rule):
            return True
    return False


def violations(tree: ast.AST, rules: Sequence[str]) -> list[tuple[str, int]]:
    """The rules the code breaks, each with the first line that breaks it, in rule order."""
    if rules:
        rules = [*rules, *(rule for rule in PRIVATE if rule not in rules)]
    first: dict[str, int] = {}
    for used, line in _uses(tree):
        for rule in rules:
            if _matches(used, rule) and (rule not in first or line < first[rule]):
                first[rule] = line
    return [(rule, first[rule]) for rule in rules if rule in first]
