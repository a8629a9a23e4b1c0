"""The rules verification applies to an exercise's files, without a sandbox (grades are given)."""

from grader import verification

FAILED_UNNAMED: dict[str, object] = {"status": "failed", "checks": [], "diagnosis": None}


def test_a_wrong_solution_must_be_diagnosed_as_itself():
    files = [("wrong/from_clock.py", "def f():\n    return 1\n", False)]
    [verdict] = verification.verify_exercise(lambda code: FAILED_UNNAMED, files)
    assert verdict.problem() == (
        "wrong/from_clock.py: fails, but is diagnosed as no known mistake: its outputs on the "
        "checks it fails must differ from every other wrong solution's"
    )


def test_a_wrong_solution_that_says_it_is_nondeterministic_need_only_fail():
    code = '"""Misconception: ..."""\n# nondeterministic: seeded from the clock\ndef f(): ...\n'
    files = [("wrong/from_clock.py", code, False)]
    [verdict] = verification.verify_exercise(lambda code: FAILED_UNNAMED, files)
    assert not verdict.diagnosable and verdict.problem() is None
    # ...but it must still fail.
    [passing] = verification.verify_exercise(lambda code: {"status": "passed"}, files)
    assert passing.problem() == "wrong/from_clock.py: must fail at least one check, but passed"


def test_a_wrong_solution_not_named_once_is_graded_again_before_it_is_a_problem():
    # Its own run may have timed out on a busy machine; a real collision would repeat.
    named = {"status": "failed", "checks": [], "diagnosis": {"wrong": "from_clock"}}
    grades = iter([FAILED_UNNAMED, named])
    files = [("wrong/from_clock.py", "def f():\n    return 1\n", False)]
    [verdict] = verification.verify_exercise(lambda code: next(grades), files)
    assert verdict.problem() is None
    # Unnamed twice: the bank's problem.
    grades = iter([FAILED_UNNAMED, FAILED_UNNAMED])
    [verdict] = verification.verify_exercise(lambda code: next(grades), files)
    assert "diagnosed as no known mistake" in (verdict.problem() or "")
