"""Curators' command line, run with the grader's interpreter:

    .venv-grader/bin/python -m practice.sandbox.cli verify fixtures/bank/<slug> [...]
    .venv-grader/bin/python -m practice.sandbox.cli grade --exercise-dir DIR --code FILE [--json]

``verify`` grades the folder's solution.py (it must pass), starter.py and every wrong/*.py (they
must not) through the real sandbox, prints one line per file, and exits 1 if any expectation is
broken (2 if a folder cannot be read).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from practice.sandbox import SandboxPool, exercise, jobs


def _summary(result: dict[str, Any]) -> str:
    failing = [c["name"] for c in result["checks"] if c["status"] in ("failed", "error")]
    text = result["status"]
    if result["status"] == "failed":
        text += ": " + "; ".join(failing)
    elif result["status"] != "passed":
        text += ": " + result["message"]
    return text


def _files(folder: Path) -> list[tuple[Path, bool]]:
    """(file, must pass) for every file ``verify`` grades."""
    files = [(folder / "solution.py", True), (folder / "starter.py", False)]
    files += [(path, False) for path in sorted((folder / "wrong").glob("*.py"))]
    return files


def verify(pool: SandboxPool, folder: Path) -> bool:
    template = exercise.load(folder)
    ok = True
    for path, must_pass in _files(folder):
        if not path.is_file():
            print(f"BROKEN  {folder.name}/{path.relative_to(folder)}: missing")
            ok = False
            continue
        result = pool.grade({**template, "code": path.read_text(encoding="utf-8")})
        good = (result["status"] == "passed") == must_pass
        ok = ok and good
        expectation = "" if good else ("  (must pass)" if must_pass else "  (must not pass)")
        label = "ok    " if good else "BROKEN"
        relative = path.relative_to(folder)
        print(f"{label}  {folder.name}/{relative}: {_summary(result)}{expectation}", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m practice.sandbox.cli")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="check an exercise's solution, starter and wrong/")
    check.add_argument("folders", nargs="+", type=Path)
    grade = commands.add_parser("grade", help="grade one file against an exercise")
    grade.add_argument("--exercise-dir", type=Path, required=True)
    grade.add_argument("--code", type=Path, required=True)
    grade.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = parser.parse_args(argv)

    with SandboxPool(sys.executable, slots=1) as pool:
        try:
            if args.command == "verify":
                results = [verify(pool, folder) for folder in args.folders]
                return 0 if all(results) else 1
            job = {**exercise.load(args.exercise_dir), "code": args.code.read_text("utf-8")}
        except (jobs.JobError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        result = pool.grade(job)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['status']}: {result['message']}")
        for entry in result["checks"]:
            line = f"  {entry['status']:8} {entry['name']}"
            print(line + (f": {entry['message']}" if entry["message"] else ""))
        if result["output"]:
            print("output:\n" + result["output"])
    return 0 if result["status"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
