"""The grade and verify_bank commands, through the real sandbox."""

import json

import pytest
from django.core.management import CommandError, call_command

from grader import mutation
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


# Kills the mutants of `2 * x` that the four checks above let through: computing in float32
# (float64 inputs whose float32 rounding shows) and a detached output (no gradient).
FLOAT64_GRADIENT = {
    "name": "float64 values and gradient",
    "code": "x = (torch.randn(5, dtype=torch.float64) * 1e3 + 1 / 3).requires_grad_()\n"
    "out = double(x)\nout.pow(2).sum().backward()",
    "compare": ["out", "x.grad"],
}


@pytest.fixture
def good(db):
    question = complete(QuestionFactory(slug="double-it", kind="code", answer=ANSWER))
    return ExerciseFactory(
        question=question,
        checks=[*DOUBLE_CHECKS, FLOAT64_GRADIENT],
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
    assert lines[0].startswith(f"{right}: passed (5/5 checks)")
    assert lines[1].startswith(f"{wrong}: failed")


def test_grade_json_and_reference(good, capsys):
    call_command("grade", "double-it", "--reference", "--json")
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["file"] == "--reference" and verdict["status"] == "passed"
    assert [c["name"] for c in verdict["checks"]] == [c["name"] for c in good.checks]


def test_grade_the_starter_fails(good, capsys):
    with pytest.raises(SystemExit):
        call_command("grade", "double-it", "--starter")
    assert "--starter: failed (0/5 checks)" in capsys.readouterr().out


def test_verify_bank_passes_a_sound_question(good, capsys, tmp_path):
    QuickCheckFactory(question=QuestionFactory(slug="talk"))
    cache = tmp_path / "cache"
    call_command("verify_bank", "double-it", "--mutant-cache", str(cache))
    out = capsys.readouterr().out
    # The reference, the starter, two wrong solutions, the equivalence probe and the two mutants
    # of `2 * x`.
    assert "1 questions, 1 code blocks run" in out and "7 submissions graded" in out
    assert (
        "double-it: mutants 2 generated, 2 killed, 0 waived, 0 survived (0 from the cache)" in out
    )
    # A second run reads both kills from the content-hash cache instead of grading them.
    call_command("verify_bank", "double-it", "--mutant-cache", str(cache))
    out = capsys.readouterr().out
    assert "2 killed, 0 waived, 0 survived (2 from the cache)" in out
    assert "5 submissions graded" in out


def test_verify_bank_fails_on_a_surviving_mutant_not_in_the_baseline(good, capsys, tmp_path):
    good.checks = DOUBLE_CHECKS  # no float64 and no gradient check: two mutants survive
    good.save()
    baseline = tmp_path / "baseline.txt"
    args = ["double-it", "--mutant-cache", "none", "--baseline", str(baseline)]
    with pytest.raises(SystemExit) as exc:
        call_command("verify_bank", *args)
    assert exc.value.code == 1
    captured = capsys.readouterr()
    assert "double-it: mutants 2 generated, 0 killed, 0 waived, 2 survived" in captured.out
    assert "double-it: mutant float32:double survives every check" in captured.err
    assert "double-it: mutant detach-added:double survives every check" in captured.err

    # Listed in the baseline (the ratchet), they pass; a waiver counts as waived.
    call_command("verify_bank", *args, "--write-baseline")
    assert "double-it detach-added:double\ndouble-it float32:double\n" in baseline.read_text()
    good.mutant_waivers = {"detach-added:double": "pretend it is equivalent"}
    good.save()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        call_command("verify_bank", *args)
    captured = capsys.readouterr()
    assert "0 killed, 1 waived, 1 survived" in captured.out
    # The waived mutant no longer survives, so its baseline line is stale: the list only shrinks.
    assert (
        "double-it: mutants-baseline.txt lists mutant detach-added:double, which is killed or "
        "waived now: delete its line" in captured.err
    )
    baseline.write_text("double-it float32:double\n")
    call_command("verify_bank", *args)


def test_verify_bank_fails_on_a_baseline_entry_that_a_better_check_killed(good, capsys, tmp_path):
    baseline = tmp_path / "baseline.txt"
    baseline.write_text("double-it float32:double\nsome-other-slug dim:3:1\n")
    with pytest.raises(SystemExit):
        call_command(
            "verify_bank", "double-it", "--mutant-cache", "none", "--baseline", str(baseline)
        )
    err = capsys.readouterr().err
    assert "lists mutant float32:double, which is killed or waived now" in err
    assert "some-other-slug" not in err  # not run this time, not judged


# A module whose initialisation the contract leaves open: the reference's __init__ draws nothing.
SCALER = (
    "import torch\n\nclass Scaler(torch.nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.w = torch.nn.Parameter(torch.zeros(3))\n\n"
    "    def forward(self, x):\n        return x * 2\n"
)
SCALER_CHECK = "model = Scaler()\nx = {draw}(3, dtype=torch.float64)\nout = model(x)"


@pytest.mark.parametrize(("draw", "passes"), [("torch.randn", False), ("gen.randn", True)])
def test_verify_bank_probes_checks_that_draw_from_the_global_stream(
    db, capsys, tmp_path, draw, passes
):
    """A check that draws its input from torch's global generator after the learner's constructor
    ran fails a correct solution whose __init__ draws (trunc_normal_ instead of zeros): the probe
    finds it. Drawn with gen, the same check passes."""
    question = complete(QuestionFactory(slug="scale-it", kind="code", answer=ANSWER))
    ExerciseFactory(
        question=question,
        solution_code=SCALER,
        starter_code="import torch\n\nclass Scaler(torch.nn.Module):\n    pass\n",
        checks=[
            {
                "name": "an example",
                "visible": True,
                "code": "out = Scaler()(torch.ones(3))",
                "compare": "out",
            },
            {"name": "integers", "code": "out = Scaler()(torch.arange(3))", "compare": "out"},
            {"name": "an empty input", "code": "out = Scaler()(torch.empty(0))", "compare": "out"},
            {
                "name": "drawn after the constructor",
                "code": SCALER_CHECK.format(draw=draw),
                "compare": "out",
            },
        ],
        wrong_solutions={
            "adds-two": SCALER.replace("x * 2", "x + 2"),
            "squares": SCALER.replace("x * 2", "x * x"),
        },
    )
    known = tmp_path / "known.txt"
    args = ["verify_bank", "scale-it", "--no-mutants", "--probe-baseline", str(known)]
    if passes:
        call_command(*args)
        # Listed as a known failure, it is said to pass (one run's seeds prove little, so the
        # run does not fail on it): the line can go.
        known.write_text("scale-it\n")
        call_command(*args)
        assert (
            "scale-it: rng-probe-baseline.txt lists it, but it passed the equivalence probe on "
            "this run's seeds: if it keeps passing, delete its line" in capsys.readouterr().out
        )
        return
    with pytest.raises(SystemExit) as exc:
        call_command(*args)
    assert exc.value.code == 1
    assert (
        "scale-it: rng-probe: the checks depend on the global random state: a correct solution "
        "that draws random numbers differently (another initialisation) would fail; draw the "
        "check's inputs with gen (drawn after the constructor)"
    ) in capsys.readouterr().err
    known.write_text("# known\nscale-it\n")
    call_command(*args)  # a known failure (the ratchet's list) does not fail the run


def test_verify_bank_records_the_reference_time_it_measured(good):
    assert good.reference_seconds is None
    call_command("verify_bank", "double-it")
    good.refresh_from_db()
    assert good.reference_seconds > 0 and good.reference_digest == good.content_digest


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


def test_verify_bank_takes_kills_from_the_committed_ledger_and_regrades_its_sample(
    good, capsys, tmp_path
):
    ledger = tmp_path / "killed.txt"
    args = ["double-it", "--mutant-cache", "none", "--ledger", str(ledger)]
    call_command("verify_bank", *args, "--write-ledger")
    assert "wrote 2 kills to" in capsys.readouterr().out
    assert len(mutation.read_ledger(ledger)) == 2

    # A clean clone (no local cache) grades neither mutant again...
    call_command("verify_bank", *args, "--ledger-sample", "0")
    out = capsys.readouterr().out
    assert "2 killed, 0 waived, 0 survived (2 from the cache)" in out
    assert "5 submissions graded" in out
    assert "ledger: 2 kills taken from killed.txt, 0 of its kills graded again" in out
    # ...except the ones the sample picks, which are graded and must still die.
    call_command("verify_bank", *args, "--ledger-sample", "1")
    out = capsys.readouterr().out
    assert "2 killed, 0 waived, 0 survived (0 from the cache)" in out
    assert "ledger: 0 kills taken from killed.txt, 2 of its kills graded again" in out

    # A changed check changes every key: nothing is taken from the ledger on trust.
    good.checks = [*good.checks, {**good.checks[-1], "name": "again"}]
    good.save()
    call_command("verify_bank", *args, "--ledger-sample", "0")
    assert "(0 from the cache)" in capsys.readouterr().out


# A countdown whose loop test, flipped to `k >= 0`, never ends (the step is 0 at k == 0): a
# mutant killed by the time limit. Its inner test's flip changes nothing, so it is waived.
COUNTDOWN = (
    "def double(x):\n"
    "    k = 3\n"
    "    while k > 0:\n"
    "        k -= 1 if k > 0 else 0\n"
    "    return 2 * x\n"
)


def test_the_ledger_holds_a_kill_across_time_limits_unless_the_limit_killed_it(
    good, capsys, tmp_path
):
    """The time limit is fitted to the reference's time as measured in the run, so it differs
    between machines: a kill it did not decide is taken from the ledger under any limit; a kill
    by the limit is graded again under a new one."""
    good.solution_code = COUNTDOWN
    good.time_limit = 1.0  # the ceiling: the fitted limit whatever the reference measures
    good.mutant_waivers = {"compare:4:1": "the inner test only differs at k == 0, never reached"}
    good.save()
    ledger = tmp_path / "killed.txt"
    args = ["double-it", "--mutant-cache", "none", "--ledger", str(ledger)]
    call_command("verify_bank", *args, "--write-ledger")
    out = capsys.readouterr().out
    assert "3 killed, 1 waived, 0 survived (0 from the cache)" in out
    assert len(mutation.read_ledger(ledger)) == 3

    call_command("verify_bank", *args, "--ledger-sample", "0")
    assert "3 killed, 1 waived, 0 survived (3 from the cache)" in capsys.readouterr().out

    good.time_limit = 1.5
    good.save()
    call_command("verify_bank", *args, "--ledger-sample", "0")
    out = capsys.readouterr().out
    assert "3 killed, 1 waived, 0 survived (2 from the cache)" in out


def test_verify_bank_refuses_a_sample_outside_zero_to_one(good):
    with pytest.raises(CommandError, match="--ledger-sample: 1.5 is not between 0 and 1"):
        call_command("verify_bank", "double-it", "--ledger-sample", "1.5")


def test_verify_bank_counts_a_mutant_that_never_acts_in_a_check_as_inert(good, capsys, tmp_path):
    # Python ints only: no float tensor ever reaches double() or comes out of it, so the float32
    # and detach-added wrappers never act; their probes pass too, and neither is a survivor.
    good.checks = [
        {"name": f"an int {n}", "code": f"out = double({n})", "compare": "out", "visible": n == 0}
        for n in (0, 3, -4, 7)
    ]
    good.save()
    baseline = tmp_path / "baseline.txt"
    cache = tmp_path / "cache"
    args = ["double-it", "--mutant-cache", str(cache), "--baseline", str(baseline)]
    call_command("verify_bank", *args)
    out = capsys.readouterr().out
    assert "double-it: mutants 2 generated, 0 killed, 0 waived, 0 survived, 2 inert" in out
    # Settled by content like a kill: the second run grades neither mutant nor probe again.
    call_command("verify_bank", *args)
    out = capsys.readouterr().out
    assert "0 survived, 2 inert" in out and "5 submissions graded" in out
