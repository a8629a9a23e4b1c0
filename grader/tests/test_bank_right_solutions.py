"""Every other correct solution the bank keeps (fixtures/bank/<slug>/right/*.py, written apart from
the reference, most of them by blind reviewers who saw only the prompt) passes its exercise's
checks through the real sandbox: a check that fails a correct learner is the exercise's fault, and
this finds it before a learner does (verify_bank grades the reference and the wrong solutions)."""

from __future__ import annotations

import pytest

from grader import exercise
from grader.tests.helpers import REPO

BANK = REPO / "fixtures" / "bank"
RIGHT = sorted(path for path in BANK.glob("*/right/*.py"))


def test_the_bank_keeps_other_correct_solutions():
    assert len({path.parent.parent.name for path in RIGHT}) >= 20


@pytest.mark.parametrize("path", RIGHT, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_another_correct_solution_passes_every_check(pool, path):
    job = exercise.load(path.parent.parent)
    result = pool.grade({**job, "code": path.read_text(encoding="utf-8"), "wrong": {}})
    failing = [f"{c['name']}: {c['message']}" for c in result["checks"] if c["status"] == "failed"]
    assert result["status"] == "passed", (result["message"], failing)
