"""Every other correct solution the bank keeps (fixtures/bank/<slug>/right/*.py, written apart from
the reference, most of them by blind reviewers who saw only the prompt) passes its exercise's
checks through the real sandbox: a check that fails a correct learner is the exercise's fault, and
this finds it before a learner does (verify_bank grades the reference and the wrong solutions).

So does the worked answer's own code, where it defines everything the starter asks for: a learner
who follows the answer must not fail the exercise it answers."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

from grader import exercise
from grader.tests.helpers import REPO

BANK = REPO / "fixtures" / "bank"
RIGHT = sorted(path for path in BANK.glob("*/right/*.py"))
PYTHON_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def answer_solution(folder: Path) -> str | None:
    """What the answer's ```python blocks that define a function or class of the starter define,
    in order: functions, classes, module constants (ALL_CAPS or _private names bound to values
    built from what is kept) and the imports those use, without the demonstrations around them
    (which may call what the exercise forbids). None when they do not define every function and
    class of the starter."""
    wanted = {
        node.name
        for node in ast.parse((folder / "starter.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }
    kept: list[tuple[ast.stmt, str]] = []
    for block in PYTHON_BLOCK.findall((folder / "answer.md").read_text(encoding="utf-8")):
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        if (
            not {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
            & wanted
        ):
            continue  # a demonstration, or the library's own API shown beside the exercise
        lines = block.splitlines()
        kept += [(node, _source(lines, node)) for node in tree.body]
    defined = {n.name for n, _ in kept if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    if not wanted or not wanted <= defined:
        return None
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node, _ in kept
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    known = set(dir(builtins)) | defined | imported
    chosen: list[tuple[ast.stmt, str]] = []
    for node, text in kept:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if (
                len(names) != len(node.targets)
                or not all(n.isupper() or n.startswith("_") for n in names)
                or not _read(node.value) <= known
            ):
                continue  # a demonstration's variable
            known.update(names)
        elif not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        chosen.append((node, text))
    used = set().union(*(_read(node) for node, _ in chosen))
    imports = [
        text
        for node, text in kept
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any((alias.asname or alias.name).split(".")[0] in used for alias in node.names)
    ]
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(text for _, text in chosen) + "\n"


def _source(lines: list[str], node: ast.stmt) -> str:
    """A statement's lines, its decorators included (ast.get_source_segment leaves them out)."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1 : node.end_lineno])


def _read(node: ast.AST) -> set[str]:
    """The names `node` reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


ANSWERS = [
    folder
    for folder in sorted(path.parent for path in BANK.glob("*/exercise.yaml"))
    if answer_solution(folder) is not None
]


def test_the_bank_keeps_other_correct_solutions():
    assert len({path.parent.parent.name for path in RIGHT}) >= 20


@pytest.mark.parametrize("path", RIGHT, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_another_correct_solution_passes_every_check(pool, path):
    job = exercise.load(path.parent.parent)
    result = pool.grade({**job, "code": path.read_text(encoding="utf-8"), "wrong": {}})
    failing = [f"{c['name']}: {c['message']}" for c in result["checks"] if c["status"] == "failed"]
    assert result["status"] == "passed", (result["message"], failing)


def test_most_answers_define_what_their_starter_asks_for():
    assert len(ANSWERS) >= 60


@pytest.mark.parametrize("folder", ANSWERS, ids=lambda p: p.name)
def test_the_worked_answers_code_passes_every_check(pool, folder):
    job = exercise.load(folder)
    result = pool.grade({**job, "code": answer_solution(folder), "wrong": {}})
    failing = [f"{c['name']}: {c['message']}" for c in result["checks"] if c["status"] == "failed"]
    assert result["status"] == "passed", (result["message"], failing)
