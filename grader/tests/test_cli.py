"""The curators' command line."""

from __future__ import annotations

import json
import shutil
import subprocess

from grader import cli
from grader.tests.helpers import EXERCISES, GRADER_PYTHON, REPO


def test_verify_prints_a_line_per_file_and_flags_a_broken_expectation(pool, tmp_path, capsys):
    assert cli.verify(pool, EXERCISES / "normalize-rows")
    broken = tmp_path / "broken-rows"
    shutil.copytree(EXERCISES / "normalize-rows", broken)
    shutil.copy(broken / "solution.py", broken / "wrong" / "actually_right.py")
    assert not cli.verify(pool, broken)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:6] == [
        "ok      normalize-rows/solution.py: passed",
        "ok      normalize-rows/starter.py: failed: matches the example in the prompt; keeps the "
        "shape and dtype of a batch; rows have unit length; leaves a zero row at zero; does not "
        "modify its input",
        "ok      normalize-rows/wrong/columns.py: failed: matches the example in the prompt; keeps "
        "the shape and dtype of a batch; rows have unit length; leaves a zero row at zero",
        "ok      normalize-rows/wrong/in_place.py: failed: does not modify its input",
        "ok      normalize-rows/wrong/uses_normalize.py: rejected: Your code uses what this "
        "exercise forbids: F.normalize (line 6).",
        "ok      normalize-rows/wrong/zero_rows_nan.py: failed: leaves a zero row at zero",
    ]
    assert "BROKEN  broken-rows/wrong/actually_right.py: passed  (must not pass)" in lines
    # The equivalence probe: the reference drawing from the global random streams passes too.
    assert lines[6] == "ok      normalize-rows/rng-probe: passed"
    assert sum(line.startswith("BROKEN") for line in lines) == 1


def test_sweep_lists_every_file_that_breaks_its_expectation_in_some_round(pool, tmp_path):
    folder = tmp_path / "broken-rows"
    shutil.copytree(EXERCISES / "normalize-rows", folder)
    shutil.copy(folder / "solution.py", folder / "wrong" / "actually_right.py")
    (folder / "right").mkdir()
    shutil.copy(folder / "wrong" / "columns.py", folder / "right" / "not_right.py")
    lines = cli.sweep(pool, folder, rounds=2)
    assert lines[0].startswith(
        "broken-rows/right/not_right.py: failed in 2 of 2 rounds (matches the example"
    )
    assert lines[1:] == [
        "broken-rows/wrong/actually_right.py: passed in 2 of 2 rounds (passed)",
        # No check takes a gradient: the mutant that detaches the output survives.
        "broken-rows/mutant detach-added:normalize_rows: passed in 2 of 2 rounds (passed)",
    ]
    # A waived mutant is not graded; a sound exercise lists nothing.
    (folder / "wrong" / "actually_right.py").unlink()
    shutil.rmtree(folder / "right")
    with (folder / "exercise.yaml").open("a", encoding="utf-8") as spec:
        spec.write("mutant_waivers:\n  detach-added:normalize_rows: no check takes a gradient\n")
    assert cli.sweep(pool, folder, rounds=2, slots=2) == []


def test_the_command_runs_with_the_grader_interpreter():
    folder = EXERCISES / "normalize-rows"
    run = subprocess.run(
        [
            GRADER_PYTHON,
            "-m",
            "grader.cli",
            "grade",
            "--exercise-dir",
            folder,
            "--code",
            folder / "wrong" / "in_place.py",
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert json.loads(run.stdout)["status"] == "failed"


def test_every_right_solution_must_pass(pool, tmp_path, capsys):
    folder = tmp_path / "rows"
    shutil.copytree(EXERCISES / "normalize-rows", folder)
    (folder / "right").mkdir()
    shutil.copy(folder / "solution.py", folder / "right" / "same_as_reference.py")
    shutil.copy(folder / "wrong" / "columns.py", folder / "right" / "not_really.py")
    assert not cli.verify(pool, folder)
    lines = capsys.readouterr().out.splitlines()
    assert "ok      rows/right/same_as_reference.py: passed" in lines
    broken = [line for line in lines if line.startswith("BROKEN")]
    assert len(broken) == 1 and broken[0].startswith("BROKEN  rows/right/not_really.py: failed")
    assert broken[0].endswith("(must pass)")


def test_raises_lists_the_generated_cases_on_which_the_reference_raises(pool, tmp_path):
    folder = tmp_path / "rows"
    shutil.copytree(EXERCISES / "normalize-rows", folder)
    assert cli.raises(pool, folder) == []
    reference = (folder / "solution.py").read_text()
    exercise_yaml = folder / "exercise.yaml"
    exercise_yaml.write_text(
        exercise_yaml.read_text()
        + "  - name: generated rows\n"
        + "    code: |\n"
        + "      outs = gen.each(gen.floats((3, 4), families=['ordinary', 'empty']), strict)\n"
        + "    compare: outs\n"
    )
    (folder / "solution.py").write_text(
        reference
        + "\ndef strict(x):\n    if x.numel() == 0:\n        raise ValueError('empty')\n"
        + "    return normalize_rows(x)\n"
    )
    assert cli.raises(pool, folder) == [
        "rows: generated rows: the reference raises 'ValueError' on the 'empty' case"
    ]
