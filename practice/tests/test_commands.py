"""The grade and verify_bank commands, through the real sandbox."""

import json

import pytest
from django.core.management import call_command

from quizbank.tests.factories import (
    ExerciseFactory,
    HintFactory,
    QuestionFactory,
    QuickCheckFactory,
)

from .conftest import DOUBLE_CHECKS

pytestmark = pytest.mark.django_db

ANSWER = "Doubling.\n\n```python\nimport torch\nassert (torch.ones(2) * 2).sum() == 4\n```\n"


def complete(question):
    HintFactory(question=question, order=1)
    HintFactory(question=question, order=2)
    question.applications.create(slug="research-prototyping", name="Research")
    return question


@pytest.fixture
def good(db):
    question = complete(QuestionFactory(slug="double-it", kind="code", answer=ANSWER))
    return ExerciseFactory(
        question=question,
        checks=DOUBLE_CHECKS,
        wrong_solutions={
            "adds-two": "def double(x):\n    return x + 2\n",
            "squares": "def double(x):\n    return x * x\n",
        },
    )


def test_grade_prints_one_verdict_per_file(good, tmp_path, capsys):
    right, wrong = tmp_path / "right.py", tmp_path / "wrong.py"
    right.write_text("def double(x):\n    return 2 * x\n")
    wrong.write_text("def double(x):\n    return x\n")
    with pytest.raises(SystemExit) as exc:
        call_command("grade", "double-it", "--code-file", str(right), "--code-file", str(wrong))
    assert exc.value.code == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith(f"{right}: passed (4/4 checks)")
    assert lines[1].startswith(f"{wrong}: failed")


def test_grade_json_and_reference(good, capsys):
    call_command("grade", "double-it", "--reference", "--json")
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["file"] == "--reference" and verdict["status"] == "passed"
    assert [c["name"] for c in verdict["checks"]] == [c["name"] for c in DOUBLE_CHECKS]


def test_grade_the_starter_fails(good, capsys):
    with pytest.raises(SystemExit):
        call_command("grade", "double-it", "--starter")
    assert "--starter: failed (0/4 checks)" in capsys.readouterr().out


def test_verify_bank_passes_a_sound_question(good, capsys):
    QuickCheckFactory(question=QuestionFactory(slug="talk"))
    call_command("verify_bank", "double-it")
    out = capsys.readouterr().out
    assert "1 questions, 1 code blocks run" in out and "4 submissions graded" in out


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # The reference is the oracle, so it can only "fail" by breaking.
        (
            {"solution_code": "def double(x):\n    raise ValueError('bug')\n"},
            "solution.py: must pass, got error",
        ),
        (
            {"wrong_solutions": {"a": "def double(x):\n    return x * 2\n", "b": "x = 1\n"}},
            "wrong/a.py: must fail at least one check, but passed",
        ),
        ({"wrong_solutions": {"a": "x = 1\n"}}, "wrong/: needs at least two"),
    ],
)
def test_verify_bank_fails_a_broken_exercise(good, capsys, change, problem):
    for field, value in change.items():
        setattr(good, field, value)
    good.save()
    with pytest.raises(SystemExit) as exc:
        call_command("verify_bank", "double-it")
    assert exc.value.code == 1
    assert f"double-it: {problem}" in capsys.readouterr().err


def test_verify_bank_fails_an_answer_whose_code_raises(good, capsys):
    good.question.answer = (
        "```python\nassert 1 + 1 == 3, 'arithmetic'\n```\n\n```python cuda\nx\n```\n"
    )
    good.question.save()
    with pytest.raises(SystemExit):
        call_command("verify_bank", "double-it")
    captured = capsys.readouterr()
    assert "double-it: answer.md line 1:" in captured.err and "AssertionError" in captured.err
    assert "skipped blocks: 1 cuda" in captured.out


def test_verify_bank_fails_an_answer_block_the_sandbox_cannot_run(good, capsys):
    good.question.answer = ANSWER + "\n```python cuda\nimport triton\n```\n"
    good.question.save()
    with pytest.raises(SystemExit):
        call_command("verify_bank", "double-it")
    err = capsys.readouterr().err
    assert "double-it: answer.md line 8: imports triton" in err and "`norun`" in err
