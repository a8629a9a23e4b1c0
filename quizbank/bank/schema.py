"""What a question of the bank must look like, checked without a database.

A *record* is one question as plain data: what `files.read_bank` builds from a folder, what
`sync.record_from_question` builds from the database, and what both writers take. Validation returns
`(field, reason)` pairs so callers can prefix the path they read.
"""

from __future__ import annotations

import re
from typing import Any

from grader import limits
from grader.jobs import JobError, mutant_waiver_problems, normalize_job

from ..models import Question, QuickCheck
from .notes import wrong_solution_notes

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
DIFFICULTIES = tuple(Question.Difficulty.values)
KINDS = tuple(Question.Kind.values)
STATUSES = tuple(Question.Status.values)
QUEUES = limits.QUEUES
QUICK_CHECK_KINDS = tuple(QuickCheck.Kind.values)

QUESTION_KEYS = {
    "title": str,
    "difficulty": str,
    "kind": str,
    "status": str,
    "topics": list,
    "applications": list,
    "concepts": list,
    "prompt": str,
    "why_asked": str,
    "hints": list,
}
QUESTION_OPTIONAL_KEYS = {"quick_checks": list, "asked_as": list}
# How a learner would search for the question in their own words (search reads them beside its
# text): a few short lines each.
ASKED_AS_MAX = 12
ASKED_AS_MAX_CHARS = 200
EXERCISE_KEYS = {"queue": str, "checks": list}
EXERCISE_OPTIONAL_KEYS = {
    "time_limit": (int, float),
    "memory_limit_mb": int,
    "forbid": list,
    "mutant_waivers": dict,
}
CHECK_KEYS = {"name": str, "code": str, "compare": (str, list)}
CHECK_OPTIONAL_KEYS = {
    "visible": bool,
    "rtol": (int, float),
    "atol": (int, float),
    "requires": str,
    "seed": str,
}
DEFAULT_TIME_LIMIT = limits.DEFAULT_TIME_LIMIT
DEFAULT_MEMORY_LIMIT_MB = limits.DEFAULT_MEMORY_MB

Errors = list[tuple[str, str]]


def _type_name(expected: type | tuple[type, ...]) -> str:
    if isinstance(expected, tuple):
        return " or ".join(t.__name__ for t in expected)
    return expected.__name__


def _keys_errors(
    data: Any, required: dict[str, Any], optional: dict[str, Any], prefix: str = ""
) -> Errors:
    if not isinstance(data, dict):
        return [(prefix.rstrip(".") or "(document)", "must be a mapping")]
    errors: Errors = []
    for key, expected in required.items():
        if key not in data or data[key] is None:
            errors.append((prefix + key, "is required"))
        elif (
            not isinstance(data[key], expected)
            or isinstance(data[key], bool)
            and expected is not bool
        ):
            errors.append((prefix + key, f"must be {_type_name(expected)}"))
    for key, expected in optional.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            errors.append((prefix + key, f"must be {_type_name(expected)}"))
    for key in data:
        if key not in required and key not in optional:
            errors.append((prefix + str(key), "unknown key"))
    return errors


def _string_list_errors(values: list[Any], field: str, minimum: int) -> Errors:
    errors: Errors = []
    if len(values) < minimum:
        errors.append((field, f"needs at least {minimum}"))
    for i, value in enumerate(values):
        if isinstance(value, dict):
            errors.append(
                (f"{field}[{i}]", "is a mapping, not text (quote text that contains ': ')")
            )
        elif not isinstance(value, str) or not value.strip():
            errors.append((f"{field}[{i}]", "must be non-empty text"))
    return errors


def asked_as_key(line: str) -> str:
    """What makes two asked_as lines the same line: case and spacing aside."""
    return " ".join(line.lower().split())


def asked_as_errors(values: list[Any]) -> Errors:
    """Errors of a question's `asked_as`: a few distinct one-line texts."""
    errors = _string_list_errors(values, "asked_as", 0)
    if errors:
        return errors
    if len(values) > ASKED_AS_MAX:
        errors.append(("asked_as", f"at most {ASKED_AS_MAX} lines, not {len(values)}"))
    seen: set[str] = set()
    for i, value in enumerate(values):
        if "\n" in value.strip():
            errors.append((f"asked_as[{i}]", "must be one line"))
        if len(value) > ASKED_AS_MAX_CHARS:
            errors.append((f"asked_as[{i}]", f"must be at most {ASKED_AS_MAX_CHARS} characters"))
        folded = asked_as_key(value)
        if folded in seen:
            errors.append((f"asked_as[{i}]", "repeats an earlier line"))
        seen.add(folded)
    return errors


def quick_check_errors(check: dict[str, Any], *, check_text: bool = True) -> Errors:
    """Errors of one quick check's shape; fields are relative to the check."""
    errors: Errors = []
    kind = check.get("kind")
    if kind not in QUICK_CHECK_KINDS:
        return [("kind", f"must be one of {', '.join(QUICK_CHECK_KINDS)}")]
    if check_text:
        for field in ("question", "explanation"):
            if not isinstance(check.get(field), str) or not check[field].strip():
                errors.append((field, "is required"))
    choices = check.get("choices") or []
    answer = check.get("answer")
    if kind in ("single", "multiple"):
        if not isinstance(choices, list) or len(choices) < 2:
            errors.append(("choices", "needs at least 2 choices"))
            return errors
        if not all(isinstance(c, str | int | float) and str(c).strip() for c in choices):
            errors.append(("choices", "every choice must be non-empty text"))
        if kind == "single":
            if not isinstance(answer, int) or isinstance(answer, bool):
                errors.append(("answer", "must be the index of the right choice"))
            elif not 0 <= answer < len(choices):
                errors.append(("answer", f"index {answer} is out of range (0-{len(choices) - 1})"))
        else:
            if not isinstance(answer, list) or not answer:
                errors.append(("answer", "must be a non-empty list of indices"))
            elif not all(isinstance(i, int) and not isinstance(i, bool) for i in answer):
                errors.append(("answer", "must be a list of indices"))
            elif any(not 0 <= i < len(choices) for i in answer):
                errors.append(("answer", f"an index is out of range (0-{len(choices) - 1})"))
            elif len(set(answer)) != len(answer):
                errors.append(("answer", "repeats an index"))
    else:
        if choices:
            errors.append(("choices", "a predict check has no choices"))
        if (
            not isinstance(answer, str | int | float)
            or isinstance(answer, bool)
            or not str(answer).strip()
        ):
            errors.append(("answer", "must be the expected output as text"))
    return errors


def check_errors(check: Any) -> Errors:
    errors = _keys_errors(check, CHECK_KEYS, CHECK_OPTIONAL_KEYS)
    if errors:
        return errors
    if not check["name"].strip():
        errors.append(("name", "must be non-empty"))
    compare = check["compare"]
    if isinstance(compare, list) and (
        not compare or not all(isinstance(e, str) and e.strip() for e in compare)
    ):
        errors.append(("compare", "must be an expression or a non-empty list of expressions"))
    try:
        compile(check["code"], "<check>", "exec")
    except SyntaxError as exc:
        errors.append(("code", f"is not valid Python: {exc.msg} (line {exc.lineno})"))
    for expression in [compare] if isinstance(compare, str) else compare:
        if isinstance(expression, str):
            try:
                compile(expression, "<compare>", "eval")
            except SyntaxError as exc:
                errors.append(("compare", f"{expression!r} is not a Python expression: {exc.msg}"))
    for field in ("rtol", "atol"):
        if field in check and check[field] < 0:
            errors.append((field, "must not be negative"))
    if "requires" in check and check["requires"] != "cuda":
        errors.append(("requires", "the only requirement is 'cuda'"))
    if "seed" in check and check["seed"] != "per-run":
        errors.append(("seed", "the only seed setting is 'per-run'"))
    return errors


def exercise_errors(exercise: dict[str, Any]) -> Errors:
    """Errors of an exercise: `meta` is exercise.yaml's content, the rest are the code files."""
    errors: Errors = []
    meta: Any = exercise.get("meta")
    errors += [
        (f"exercise.yaml: {f}", r)
        for f, r in _keys_errors(meta, EXERCISE_KEYS, EXERCISE_OPTIONAL_KEYS)
    ]
    if errors:
        return errors
    if meta["queue"] not in QUEUES:
        errors.append(("exercise.yaml: queue", f"must be one of {', '.join(QUEUES)}"))
    if not 0 < float(meta.get("time_limit", DEFAULT_TIME_LIMIT)) <= limits.MAX_TIME_LIMIT:
        errors.append(
            (
                "exercise.yaml: time_limit",
                f"must be more than 0 and at most {limits.MAX_TIME_LIMIT:g} seconds",
            )
        )
    memory = int(meta.get("memory_limit_mb", DEFAULT_MEMORY_LIMIT_MB))
    if not limits.MIN_MEMORY_MB <= memory <= limits.MAX_MEMORY_MB:
        errors.append(
            (
                "exercise.yaml: memory_limit_mb",
                f"must be from {limits.MIN_MEMORY_MB} to {limits.MAX_MEMORY_MB}",
            )
        )
    errors += [
        (f"exercise.yaml: {f}", r)
        for f, r in _string_list_errors(meta.get("forbid") or [], "forbid", 0)
    ]
    errors += [
        ("exercise.yaml: mutant_waivers", problem)
        for problem in mutant_waiver_problems(meta.get("mutant_waivers") or {})
    ]
    if not meta["checks"]:
        errors.append(("exercise.yaml: checks", "needs at least one check"))
    names: set[str] = set()
    for i, check in enumerate(meta["checks"]):
        errors += [(f"exercise.yaml: checks[{i}].{f}", r) for f, r in check_errors(check)]
        name = check.get("name") if isinstance(check, dict) else None
        if isinstance(name, str):
            if name in names:
                errors.append(
                    (f"exercise.yaml: checks[{i}].name", f"duplicate check name {name!r}")
                )
            names.add(name)
    for field, filename in (("starter_code", "starter.py"), ("solution_code", "solution.py")):
        code = exercise.get(field)
        if not isinstance(code, str) or not code.strip():
            errors.append((filename, "is required for a code question"))
            continue
        try:
            compile(code, filename, "exec")
        except SyntaxError as exc:
            errors.append((filename, f"is not valid Python: {exc.msg} (line {exc.lineno})"))
    for filename, code in _code_files(exercise):
        if isinstance(code, str) and len(code.encode("utf-8")) > limits.MAX_SOURCE_BYTES:
            errors.append((filename, f"is over {limits.MAX_SOURCE_BYTES} bytes"))
    if not errors:
        errors += _grader_errors(exercise)
    for name, code in (exercise.get("wrong_solutions") or {}).items():
        if not SLUG_RE.match(name.replace("_", "-")):
            errors.append((f"wrong/{name}.py", "name must be lowercase letters, digits, - or _"))
        try:
            compile(code, f"wrong/{name}.py", "exec")
        except SyntaxError as exc:
            errors.append(
                (f"wrong/{name}.py", f"is not valid Python: {exc.msg} (line {exc.lineno})")
            )
            continue
        notes = wrong_solution_notes(code)
        if notes is None:
            errors.append(
                (
                    f"wrong/{name}.py",
                    "must open with a docstring naming its 'Misconception:', a 'Correction:' "
                    "and a 'Hint:'",
                )
            )
        elif "correction" not in notes:
            # The learner matched to this mistake is told what is true, not only what they may
            # believe (issue 27): a belief with no correction leaves them to guess the fact.
            errors.append(
                (
                    f"wrong/{name}.py",
                    "must say what is true in a 'Correction:' paragraph after the misconception",
                )
            )
    return errors


def _code_files(exercise: dict[str, Any]) -> list[tuple[str, Any]]:
    files = [
        ("starter.py", exercise.get("starter_code")),
        ("solution.py", exercise.get("solution_code")),
    ]
    files += [(f"wrong/{n}.py", c) for n, c in (exercise.get("wrong_solutions") or {}).items()]
    return files


def exercise_job(exercise: dict[str, Any], code: str) -> dict[str, Any]:
    """The grader's job for `code` against an exercise record (meta from exercise.yaml)."""
    meta = exercise["meta"]
    return {
        "code": code,
        "reference": exercise["solution_code"],
        "checks": meta["checks"],
        "forbid": meta.get("forbid") or [],
        "time_limit": meta.get("time_limit", DEFAULT_TIME_LIMIT),
        "memory_limit_mb": meta.get("memory_limit_mb", DEFAULT_MEMORY_LIMIT_MB),
        "queue": meta["queue"],
    }


def _grader_errors(exercise: dict[str, Any]) -> Errors:
    """The grader's own validation of the job: the final word on what it accepts, so nothing the
    schema above missed can be saved and then refused at grading time. The bank and the admin also
    hold checks to computing values only: no comparison or predicate runs in the sandbox, where a
    submission could have patched it (grader.jobs.pure_check_problems)."""
    try:
        normalize_job(exercise_job(exercise, exercise["solution_code"]), pure_checks=True)
    except JobError as exc:
        return [("exercise.yaml", str(exc))]
    return []


def record_errors(record: dict[str, Any], *, topics: set[str], applications: set[str]) -> Errors:
    """Everything wrong with one question record. Field names are prefixed with their file."""
    meta: Any = record.get("question")
    errors = [
        (f"question.yaml: {f}", r)
        for f, r in _keys_errors(meta, QUESTION_KEYS, QUESTION_OPTIONAL_KEYS)
    ]
    if errors:
        return errors
    q = "question.yaml: "
    if not SLUG_RE.match(record["slug"]):
        errors.append(("(folder name)", "a slug is lowercase letters, digits and single hyphens"))
    if not meta["title"].strip():
        errors.append((q + "title", "must be non-empty"))
    if len(meta["title"]) > 200:
        errors.append((q + "title", "must be at most 200 characters"))
    for field, allowed in (("difficulty", DIFFICULTIES), ("kind", KINDS), ("status", STATUSES)):
        if meta[field] not in allowed:
            errors.append((q + field, f"{meta[field]!r} is not one of {', '.join(allowed)}"))
    for field in ("prompt", "why_asked"):
        if not meta[field].strip():
            errors.append((q + field, "must be non-empty"))
    errors += [(q + f, r) for f, r in _string_list_errors(meta["topics"], "topics", 1)]
    for slug in meta["topics"]:
        if isinstance(slug, str) and slug not in topics:
            errors.append((q + "topics", f"unknown topic {slug!r}"))
    if len(set(meta["topics"])) != len(meta["topics"]):
        errors.append((q + "topics", "lists a topic twice"))
    errors += [(q + f, r) for f, r in _string_list_errors(meta["applications"], "applications", 0)]
    for slug in meta["applications"]:
        if isinstance(slug, str) and slug not in applications:
            errors.append((q + "applications", f"unknown application {slug!r}"))
    errors += [(q + f, r) for f, r in _string_list_errors(meta["concepts"], "concepts", 0)]
    errors += [(q + f, r) for f, r in _string_list_errors(meta["hints"], "hints", 0)]
    errors += [(q + f, r) for f, r in asked_as_errors(meta.get("asked_as") or [])]
    for i, check in enumerate(meta.get("quick_checks") or []):
        if not isinstance(check, dict):
            errors.append((f"{q}quick_checks[{i}]", "must be a mapping"))
            continue
        unknown = set(check) - {"kind", "question", "choices", "answer", "explanation"}
        for key in sorted(unknown):
            errors.append((f"{q}quick_checks[{i}].{key}", "unknown key"))
        errors += [(f"{q}quick_checks[{i}].{f}", r) for f, r in quick_check_errors(check)]
    if not isinstance(record.get("answer"), str) or not record["answer"].strip():
        errors.append(("answer.md", "is required"))
    exercise = record.get("exercise")
    if meta["kind"] == "code":
        if exercise is None:
            errors.append(("exercise.yaml", "is required for a code question"))
        else:
            errors += exercise_errors(exercise)
    elif exercise is not None:
        errors.append(("exercise.yaml", "only code questions have an exercise"))
    return errors
