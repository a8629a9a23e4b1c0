"""Curators' command line, run with the grader's interpreter:

    .venv-grader/bin/python -m grader.cli verify fixtures/bank/<slug> [...]
    .venv-grader/bin/python -m grader.cli grade --exercise-dir DIR --code FILE [--json]
    .venv-grader/bin/python -m grader.cli raises fixtures/bank/<slug> [...]
    .venv-grader/bin/python -m grader.cli sweep [--rounds 3] [--slots 2] fixtures/bank/<slug> [...]

``verify`` grades the folder's solution.py and every right/*.py (they must pass), starter.py and
every wrong/*.py (they must not) through the real sandbox, then the equivalence probe of the
reference (grader/probes.py; it must pass unless exercise.yaml waives ``rng-probe``), prints one
line per file, and exits 1 if any expectation is broken (2 if a folder cannot be read).
``raises`` lists the generated cases on which the reference raises, for a curator to hold against
the prompt (a case the contract does not state fails a correct solution that differs there).
``sweep`` grades the reference, right/, wrong/ and every unwaived mutant of each folder once a
round, each round on seeds the grader draws afresh (every hidden check's inputs move with its
run's seed), and prints each file whose verdict is not what it must be in some round: a right
solution failed, a wrong one or a mutant passed. A verdict that holds on one run's seeds only is
found here, not by CI on the day another seed is drawn. Exits 1 if any is found.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader import SandboxPool, exercise, jobs, mutate, probes, verification


def _files(folder: Path, kind: str) -> dict[str, str]:
    """The folder's wrong/*.py or right/*.py, by name."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / kind).glob("*.py"))}


def verify(pool: SandboxPool, folder: Path) -> bool:
    template = exercise.load(folder)
    missing = [name for name in ("solution.py", "starter.py") if not (folder / name).is_file()]
    for name in missing:
        print(f"BROKEN  {folder.name}/{name}: missing")
    if missing:
        return False
    files = verification.exercise_files(
        solution=(folder / "solution.py").read_text(encoding="utf-8"),
        starter=(folder / "starter.py").read_text(encoding="utf-8"),
        wrong=_files(folder, "wrong"),
        right=_files(folder, "right"),
    )
    ok = True
    for file in verification.verify_exercise(
        lambda code: pool.grade({**template, "code": code}), files
    ):
        problem = file.problem()
        ok = ok and problem is None
        label = "ok    " if problem is None else "BROKEN"
        if not file.ok:
            detail = "  (must pass)" if file.must_pass else "  (must not pass)"
        else:
            detail = f"  ({problem})" if problem else ""
        print(f"{label}  {folder.name}/{file.label}: {file.summary()}{detail}", flush=True)
    if probes.PROBE_ID in exercise.waivers(folder):
        print(f"waived  {folder.name}/{probes.PROBE_ID}", flush=True)
        return ok
    # The equivalence probe: the reference drawing from the global random streams must pass too.
    result = pool.grade({**template, "code": probes.probed(template["reference"]), "wrong": {}})
    problem = probes.problem(result)
    label = "ok    " if problem is None else "BROKEN"
    print(f"{label}  {folder.name}/{probes.PROBE_ID}: {problem or 'passed'}", flush=True)
    return ok and problem is None


# Appended to the reference for ``raises``: each of its top-level functions returns what it raised
# instead of raising, so a generated case on which the reference raises fails the check and the
# counterexample names that case and the exception.
_REPORT_RAISES = """

import functools as _raises_functools


def _raises_report(function):
    @_raises_functools.wraps(function)
    def reporting(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as error:
            return ("raised", type(error).__name__)

    return reporting


for _raises_name, _raises_value in list(globals().items()):
    if (
        callable(_raises_value)
        and not isinstance(_raises_value, type)
        and getattr(_raises_value, "__module__", None) == __name__
        and not _raises_name.startswith("_")
    ):
        globals()[_raises_name] = _raises_report(_raises_value)
"""
_EXCEPTION_NAME = re.compile(r"^'[A-Z][A-Za-z0-9]*(Error|Exception)'$")


def raises(pool: SandboxPool, folder: Path) -> list[str]:
    """The generated cases on which the folder's reference raises (its top-level functions only,
    the smallest case of each check): each must be a behaviour the prompt states, or one every
    correct solution must share, or a correct solution that differs there is failed."""
    template = exercise.load(folder)
    code = template["reference"] + _REPORT_RAISES
    result = pool.grade({**template, "code": code, "wrong": {}})
    found = []
    for entry in result["checks"]:
        example = entry.get("counterexample") or {}
        if entry["status"] == "failed" and _EXCEPTION_NAME.match(example.get("expected", "")):
            found.append(
                f"{folder.name}: {entry['name']}: the reference raises {example['expected']} on"
                f" the {example['family']!r} case"
            )
    return found


def sweep(pool: SandboxPool, folder: Path, rounds: int, slots: int = 1) -> list[str]:
    """What breaks an expectation in some of ``rounds`` rounds, each file graded once a round.

    A slot draws a fresh seed for an exercise every grading.SEED_USES grades of it
    (grading.SeedRotation), so a file's grades in two rounds run on different seeds whenever the
    exercise has at least that many files a slot (mutants included, it nearly always does)."""
    template = exercise.load(folder)
    waived = exercise.waivers(folder)
    # (label, code, must pass, the probe of a wrapping mutant: passing with it is inert)
    files: list[tuple[str, str, bool, str | None]] = [
        (label, code, must_pass, None)
        for label, code, must_pass in verification.exercise_files(
            solution=template["reference"],
            starter=(folder / "starter.py").read_text(encoding="utf-8"),
            wrong=_files(folder, "wrong"),
            right=_files(folder, "right"),
        )
        if label != "starter.py"
    ]
    files += [
        (f"mutant {m.id}", m.source, False, m.probe)
        for m in mutate.mutants(template["reference"])
        if m.id not in waived
    ]

    def grade(item: tuple[str, str, bool, str | None]) -> tuple[bool, str]:
        label, code, must_pass, probe = item
        result = pool.grade({**template, "code": code, "wrong": {}})
        if result.get("grader_failed"):
            return True, f"the grader failed: {result['message']}"
        passed = result["status"] == "passed"
        if passed and probe is not None:
            inert = pool.grade({**template, "code": probe, "wrong": {}})["status"] == "passed"
            if inert:
                return True, "inert"
        failing = [c["name"] for c in result.get("checks", []) if c["status"] != "passed"]
        return passed == must_pass, "passed" if passed else "; ".join(failing) or result["status"]

    missed: dict[str, list[str]] = {}
    with ThreadPoolExecutor(max_workers=max(1, slots)) as executor:
        for _ in range(rounds):
            for (label, *_), (ok, detail) in zip(files, executor.map(grade, files), strict=True):
                if not ok:
                    missed.setdefault(label, []).append(detail)
    expected = {label: must_pass for label, _, must_pass, _ in files}
    return [
        f"{folder.name}/{label}: {'failed' if expected[label] else 'passed'} in {len(details)} of"
        f" {rounds} rounds ({details[0]})"
        for label, details in missed.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.cli")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="check an exercise's solution, starter and wrong/")
    check.add_argument("folders", nargs="+", type=Path)
    grade = commands.add_parser("grade", help="grade one file against an exercise")
    grade.add_argument("--exercise-dir", type=Path, required=True)
    grade.add_argument("--code", type=Path, required=True)
    grade.add_argument("--json", action="store_true", help="print the whole result as JSON")
    audit = commands.add_parser(
        "raises", help="list the generated cases on which an exercise's reference raises"
    )
    audit.add_argument("folders", nargs="+", type=Path)
    swept = commands.add_parser(
        "sweep", help="grade every file and mutant of an exercise on several runs' seeds"
    )
    swept.add_argument("--rounds", type=int, default=3)
    swept.add_argument("--slots", type=int, default=1)
    swept.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "sweep" and (args.rounds < 1 or args.slots < 1):
        parser.error("sweep: --rounds and --slots must be at least 1")

    with SandboxPool(sys.executable, slots=getattr(args, "slots", 1)) as pool:
        try:
            if args.command == "sweep":
                found = []
                for folder in args.folders:
                    lines = sweep(pool, folder, args.rounds, args.slots)
                    print(f"{folder.name}: {len(lines)} found in {args.rounds} rounds", flush=True)
                    for line in lines:
                        print(line, flush=True)
                    found += lines
                return 1 if found else 0
            if args.command == "verify":
                results = [verify(pool, folder) for folder in args.folders]
                return 0 if all(results) else 1
            if args.command == "raises":
                for folder in args.folders:
                    for line in raises(pool, folder):
                        print(line, flush=True)
                return 0
            job = {**exercise.load(args.exercise_dir), "code": args.code.read_text("utf-8")}
        except (jobs.JobError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        result = pool.grade(job)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['status']}: {result['message']}")
        if result.get("diagnosis"):
            d = result["diagnosis"]
            print(f"diagnosis: like wrong/{d['wrong']}.py ({d['confidence']})")
        for entry in result["checks"]:
            line = f"  {entry['status']:8} {entry['name']}"
            print(line + (f": {entry['message']}" if entry["message"] else ""))
        if result["output"]:
            print("output:\n" + result["output"])
    return 0 if result["status"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
