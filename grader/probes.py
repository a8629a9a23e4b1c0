"""The equivalence probe of an exercise: a copy of its reference that must pass every check.

A check that draws its inputs from a global random stream (``torch.randn``, ``random.random``,
``np.random.rand``) after the learner's code ran gets other inputs when a correct solution
consumes that stream differently from the reference (another weight initialisation, left open
by the contract): the learner fails for the curator's mistake. ``probed(source)`` inserts a
draw from every global stream at the start of every function and method of the reference;
it computes what the reference computes, so it must pass. If it does not, the checks it fails
depend on the global random state, and must draw with ``gen`` (grader/gen.py) instead.

Pure syntax-tree work, standard library only, like grader/mutate.py. An exercise whose contract
really requires the global stream waives the probe in exercise.yaml: ``mutant_waivers`` with the
id ``PROBE_ID`` and the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

PROBE_ID = "rng-probe"
PROBLEM = (
    "the checks depend on the global random state: a correct solution that draws random numbers "
    "differently (another initialisation) would fail; draw the check's inputs with gen"
)

# The exercises known to fail the probe when it was introduced: `<slug>` a line. verify_bank
# fails on a failure not listed here and says when a listed slug passed on its run's seeds.
BASELINE_NAME = "rng-probe-baseline.txt"

_DRAW = "_probe_draw"
_PRELUDE = f"""
import random as _probe_random

import torch as _probe_torch

try:
    import numpy as _probe_numpy
except ImportError:
    _probe_numpy = None


def {_DRAW}():
    _probe_torch.rand(7)
    _probe_random.random()
    if _probe_numpy is not None:
        _probe_numpy.random.rand(3)
"""


class _Insert(ast.NodeTransformer):
    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        body = node.body
        at = 1 if _is_docstring(body[0]) else 0
        call = ast.Expr(ast.Call(ast.Name(_DRAW, ast.Load()), [], []))
        node.body = body[:at] + [call] + body[at:]
        return node

    visit_FunctionDef = _visit_function  # noqa: N815 - ast.NodeTransformer's naming
    visit_AsyncFunctionDef = _visit_function  # noqa: N815


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def probed(source: str) -> str:
    """``source`` (a module) with a draw from every global random stream at the start of every
    function and method body (after its docstring), the helper placed after the module's
    docstring and __future__ imports."""
    tree = _Insert().visit(ast.parse(source))
    body = tree.body
    at = 0
    while at < len(body) and (
        (isinstance(body[at], ast.ImportFrom) and body[at].module == "__future__")
        or (at == 0 and _is_docstring(body[at]))
    ):
        at += 1
    tree.body = body[:at] + ast.parse(_PRELUDE).body + body[at:]
    return ast.unparse(ast.fix_missing_locations(tree))


def problem(result: dict) -> str | None:
    """Why the probed reference's verdict ``result`` shows the checks depend on the global random
    state, or None when it passed. (A grader failure is the caller's to handle.)"""
    if result.get("status") == "passed":
        return None
    failing = [c["name"] for c in result.get("checks", []) if c["status"] in ("failed", "error")]
    where = f" ({'; '.join(failing)})" if failing else f" ({result.get('message', '')})"
    return f"{PROBE_ID}: {PROBLEM}{where}"


def read_baseline(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    lines = (raw.split("#", 1)[0].strip() for raw in path.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line}
