"""Proving an exercise grades as it should: the reference passes, the starter and every wrong
solution fail. One implementation for the curators' CLI (files) and the verify_bank and grade
commands (the database)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Grade = Callable[[str], dict[str, Any]]

# A wrong solution whose outputs change from run to run (it seeds from the clock, say) cannot be
# named for certain: the diagnosis matches outputs exactly. Its file says so in a comment line,
# `# nondeterministic: <why>`; it must still fail, but no diagnosis is required of it.
NONDETERMINISTIC = re.compile(r"^# nondeterministic: \S", re.MULTILINE)


@dataclass(frozen=True)
class FileVerdict:
    label: str  # "solution.py", "starter.py", "wrong/<name>.py"
    must_pass: bool
    result: dict[str, Any]
    diagnosable: bool = True  # False: a wrong solution that says it is nondeterministic

    @property
    def passed(self) -> bool:
        return self.result["status"] == "passed"

    @property
    def ok(self) -> bool:
        """Passes if it must, fails if it must (see problem() for the diagnosis rule)."""
        return self.passed == self.must_pass

    def summary(self) -> str:
        """The status, and what failed: the failing checks' names, or the overall message."""
        result = self.result
        failing = [c for c in result.get("checks", []) if c["status"] in ("failed", "error")]
        text = result["status"]
        if result["status"] == "failed":
            text += ": " + "; ".join(c["name"] for c in failing)
        elif result["status"] != "passed":
            text += ": " + result.get("message", "")
        return text

    def problem(self) -> str | None:
        """Why this file breaks the exercise, or None when it behaves. A wrong solution must also
        be diagnosed as itself: a learner who makes that mistake is then told its misconception.
        (A rejected, timed-out or crashing run is explained by its verdict's own message.)"""
        wrong = self.label.startswith("wrong/")
        if self.ok and wrong and self.result["status"] == "failed" and self.diagnosable:
            name = self.label.removeprefix("wrong/").removesuffix(".py")
            found = (self.result.get("diagnosis") or {}).get("wrong")
            if found != name:
                other = f"wrong/{found}.py" if found else "no known mistake"
                return (
                    f"{self.label}: fails, but is diagnosed as {other}: its outputs on the checks "
                    "it fails must differ from every other wrong solution's"
                )
            return None
        if self.ok:
            return None
        if not self.must_pass:
            return f"{self.label}: must fail at least one check, but passed"
        failing = [
            f"{c['name']}: {c.get('message', '')}"
            for c in self.result.get("checks", [])
            if c["status"] not in ("passed", "skipped")
        ]
        detail = "; ".join(failing) or self.result.get("message", "")
        return f"{self.label}: must pass, got {self.result['status']}: {detail}"


def exercise_files(
    *,
    solution: str,
    starter: str,
    wrong: Mapping[str, str],
    right: Mapping[str, str] | None = None,
) -> list[tuple[str, str, bool]]:
    """(label, code, must pass) for every file an exercise ships. ``right``: other correct
    solutions (the bank's right/*.py), written apart from the reference: the checks must pass
    each, so a check that holds a correct learner to the reference's accidents (an exception on
    an input the prompt says nothing of, a call a hint recommends refused) is the exercise's
    fault, found before a learner is failed by it."""
    files = [("solution.py", solution, True), ("starter.py", starter, False)]
    files += [(f"right/{name}.py", code, True) for name, code in sorted((right or {}).items())]
    files += [(f"wrong/{name}.py", code, False) for name, code in sorted(wrong.items())]
    return files


def verify_exercise(grade: Grade, files: list[tuple[str, str, bool]]) -> list[FileVerdict]:
    verdicts = []
    for label, code, must_pass in files:
        found = FileVerdict(label, must_pass, grade(code), not NONDETERMINISTIC.search(code))
        if found.ok and found.problem():
            # Failed as it must but was not named as itself: once more before it is the bank's
            # problem. The wrong solution's own run may have timed out on a busy machine (a
            # time-out is not cached, grading.py); two solutions that really match repeat.
            found = FileVerdict(label, must_pass, grade(code), found.diagnosable)
        verdicts.append(found)
    return verdicts
