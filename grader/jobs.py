"""The job format (exercise.yaml plus the code to grade), validated the same way on both sides.

Standard library only: the client validates before sending, so a malformed job is the caller's
ValueError, and the zygote validates again because it trusts nothing it did not check.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from typing import Any

from grader.limits import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIME_LIMIT,
    MAX_CHECK_NAME_CHARS,
    MAX_CHECKS,
    MAX_MEMORY_MB,
    MAX_SOURCE_BYTES,
    MAX_TIME_LIMIT,
    MIN_MEMORY_MB,
    QUEUES,
)

__all__ = [
    "MAX_SOURCE_BYTES",
    "PURE_CHECKS",
    "JobError",
    "normalize_check",
    "normalize_job",
    "normalize_snippets",
    "pure_check_problems",
    "address_problems",
]

_JOB_KEYS = {
    "code",
    "reference",
    "checks",
    "forbid",
    "time_limit",
    "memory_limit_mb",
    "queue",
    "wrong",
}
MAX_WRONG_SOLUTIONS = 32
_CHECK_KEYS = {"name", "visible", "code", "compare", "rtol", "atol", "requires", "seed"}
PER_RUN = "per-run"  # a check's seed drawn by the grader per run (grading.SeedRotation)


class JobError(ValueError):
    """The job itself is malformed (a bug in the caller or in the exercise files)."""


# Check code runs in the submission's process, where the submission may have replaced
# torch.equal, Tensor.__eq__ or anything else (issue 11, finding 4): it must only compute values
# and leave every comparison and predicate to the trusted zygote (compare.py). Off until the
# bank's checks follow the rule; `pure_check_problems` lists what breaks it.
PURE_CHECKS = False
PREDICATES = frozenset(
    {
        "equal", "allclose", "isclose", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less",
        "greater_equal", "less_equal", "not_equal", "isfinite", "isnan", "isinf", "isposinf",
        "isneginf", "all", "any", "data_ptr", "untyped_storage", "storage", "is_contiguous",
        "is_same_size", "assert_close", "is_nonzero", "is_set_to",
    }
)  # fmt: skip
_OPERATORS = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip


def _check_trees(code: str, expressions: list[str]) -> Iterator[tuple[str, ast.AST | str]]:
    """(mode, syntax tree) of a check's code ("exec") and of each compare expression ("eval"),
    or (mode, the exception's name) where one does not parse."""
    sources = [(code, "exec")] + [(expression, "eval") for expression in expressions]
    for source, mode in sources:
        try:
            yield mode, ast.parse(source, mode=mode)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            yield mode, type(error).__name__


def pure_check_problems(code: str, expressions: list[str]) -> list[str]:
    """What in a check's code or compare expressions compares or tests, e.g. "torch.equal()"."""
    problems: list[str] = []
    for _, tree in _check_trees(code, expressions):
        if isinstance(tree, str):
            problems.append(f"code that does not parse ({tree})")
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                problems += [f"`{_OPERATORS.get(type(op), '?')}`" for op in node.ops]
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in PREDICATES:
                    problems.append(f"{name}()")
    return list(dict.fromkeys(problems))


# Where an ``id()`` may stand in a check: as a key that finds an object again (``{id(p): name}``,
# ``names[id(p)]``, ``names.get(id(p))``). Anywhere else its value can reach the compared values,
# and an address differs from run to run: the reference would not match itself, nor a wrong
# solution its own diagnosis (found in weight-initialization, issue 23).
_KEY_METHODS = {"get", "pop", "setdefault", "add", "discard", "remove"}


def address_problems(code: str, expressions: list[str]) -> list[str]:
    """Each ``id()`` in a check used as a value rather than as a lookup key, e.g. "line 3"."""
    problems: list[str] = []
    for mode, tree in _check_trees(code, expressions):
        if isinstance(tree, str):
            continue  # pure_check_problems names it
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "id"
            ):
                continue
            parent = parents.get(node)
            as_key = (
                (isinstance(parent, ast.Subscript) and parent.slice is node)
                or (isinstance(parent, ast.Dict) and node in parent.keys)
                or (isinstance(parent, ast.DictComp) and parent.key is node)
                or (
                    isinstance(parent, ast.Call)
                    and isinstance(parent.func, ast.Attribute)
                    and parent.func.attr in _KEY_METHODS
                    and parent.args[:1] == [node]
                )
            )
            if not as_key:
                problems.append(f"id() on line {node.lineno}" if mode == "exec" else "id()")
    return problems


def mutant_waiver_problems(waivers: Any) -> list[str]:
    """What is wrong with an exercise's ``mutant_waivers`` (mutant id -> one-line reason why
    that mutant is equivalent to the reference)."""
    from grader.mutate import OPERATORS  # standard library only, like this module
    from grader.probes import PROBE_ID

    if not isinstance(waivers, Mapping):
        return ["must map mutant ids to a one-line reason"]
    problems = []
    for mutant_id, reason in waivers.items():
        if not isinstance(mutant_id, str) or (
            mutant_id != PROBE_ID and mutant_id.split(":")[0] not in OPERATORS
        ):
            problems.append(f"{mutant_id!r} is not a mutant id (<operator>:<line>:<n>)")
        elif not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
            problems.append(f"{mutant_id}: the reason must be one line of text")
    return problems


def _number(value: Any, what: str) -> float:
    if type(value) not in (int, float) or value != value or value < 0:
        raise JobError(f"{what} must be a non-negative number")
    return float(value)


def normalize_check(raw: Any, index: int, *, pure: bool | None = None) -> dict[str, Any]:
    where = f"checks[{index}]"
    if not isinstance(raw, Mapping):
        raise JobError(f"{where} must be a mapping")
    unknown = set(raw) - _CHECK_KEYS
    if unknown:
        raise JobError(f"{where}: unknown keys {sorted(unknown)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise JobError(f"{where}.name must be a non-empty string")
    if len(name) > MAX_CHECK_NAME_CHARS:
        raise JobError(f"{where}.name must be at most {MAX_CHECK_NAME_CHARS} characters")
    compare = raw.get("compare")
    expressions = [compare] if isinstance(compare, str) else compare
    if (
        not isinstance(expressions, list)
        or not expressions
        or not all(isinstance(e, str) and e.strip() for e in expressions)
    ):
        raise JobError(f"{where}.compare must be an expression or a list of expressions")
    code = raw.get("code", "")
    if not isinstance(code, str):
        raise JobError(f"{where}.code must be a string")
    requires = raw.get("requires")
    if requires not in (None, "cuda"):
        raise JobError(f"{where}.requires must be 'cuda' when given")
    seed = raw.get("seed")
    if seed not in (None, PER_RUN):
        raise JobError(f"{where}.seed must be '{PER_RUN}' when given")
    visible = raw.get("visible", False)
    if not isinstance(visible, bool):
        raise JobError(f"{where}.visible must be true or false")
    if not visible:
        # Every hidden check runs on a seed the grader draws (issue 23): on seed 0, values
        # extracted from its inputs or messages once would replay forever. Visible examples
        # keep seed 0 so the learner sees the same example every time.
        seed = PER_RUN
    if PURE_CHECKS if pure is None else pure:
        problems = pure_check_problems(code, list(expressions))
        if problems:
            raise JobError(
                f"{where} ({name}) compares inside the sandbox, where the submission controls "
                f"torch: {', '.join(problems)}; return the values and let compare decide"
            )
        addresses = address_problems(code, list(expressions))
        if addresses:
            raise JobError(
                f"{where} ({name}) uses an object's address as a value ({', '.join(addresses)}): "
                "it changes from run to run; use id() only as a key that finds an object again"
            )
    return {
        "name": name,
        "visible": visible,
        "code": code,
        "compare": list(expressions),
        "single": isinstance(compare, str),
        "rtol": None if raw.get("rtol") is None else _number(raw["rtol"], f"{where}.rtol"),
        "atol": None if raw.get("atol") is None else _number(raw["atol"], f"{where}.atol"),
        "requires": requires,
        "seed": seed,
    }


def normalize_job(raw: Any, *, pure_checks: bool | None = None) -> dict[str, Any]:
    """Return the job with defaults filled in, or raise JobError naming the first problem."""
    if not isinstance(raw, Mapping):
        raise JobError("a job must be a mapping")
    unknown = set(raw) - _JOB_KEYS
    if unknown:
        raise JobError(f"unknown job keys {sorted(unknown)}")
    for key in ("code", "reference"):
        if not isinstance(raw.get(key), str):
            raise JobError(f"job.{key} must be a string")
    checks = raw.get("checks")
    if not isinstance(checks, list) or not checks:
        raise JobError("job.checks must be a non-empty list")
    if len(checks) > MAX_CHECKS:
        raise JobError(f"job.checks must hold at most {MAX_CHECKS} checks")
    normalized = [normalize_check(check, i, pure=pure_checks) for i, check in enumerate(checks)]
    names = [check["name"] for check in normalized]
    if len(set(names)) != len(names):
        raise JobError("check names must be unique")
    forbid = raw.get("forbid") or []
    if not isinstance(forbid, list) or not all(isinstance(f, str) and f for f in forbid):
        raise JobError("job.forbid must be a list of names")
    time_limit = _number(raw.get("time_limit", DEFAULT_TIME_LIMIT), "job.time_limit")
    if not 0 < time_limit <= MAX_TIME_LIMIT:
        raise JobError(f"job.time_limit must be in (0, {MAX_TIME_LIMIT:g}] seconds")
    memory = raw.get("memory_limit_mb", DEFAULT_MEMORY_MB)
    if type(memory) is not int or not MIN_MEMORY_MB <= memory <= MAX_MEMORY_MB:
        raise JobError(
            f"job.memory_limit_mb must be an integer from {MIN_MEMORY_MB} to {MAX_MEMORY_MB}"
        )
    queue = raw.get("queue", "cpu")
    if queue not in QUEUES:
        raise JobError(f"job.queue must be one of {QUEUES}")
    wrong = raw.get("wrong") or {}
    if (
        not isinstance(wrong, Mapping)
        or len(wrong) > MAX_WRONG_SOLUTIONS
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in wrong.items())
    ):
        raise JobError(
            f"job.wrong must map at most {MAX_WRONG_SOLUTIONS} names to wrong solutions' code"
        )
    return {
        "code": raw["code"],
        "reference": raw["reference"],
        "checks": normalized,
        "forbid": list(forbid),
        "time_limit": time_limit,
        "memory_limit_mb": memory,
        "queue": queue,
        "wrong": dict(wrong),
    }


def normalize_snippets(blocks: Any, time_limit: Any) -> tuple[list[str], float]:
    if not isinstance(blocks, list) or not all(isinstance(b, str) for b in blocks):
        raise JobError("blocks must be a list of strings")
    limit = _number(time_limit, "time_limit")
    if not 0 < limit <= MAX_TIME_LIMIT:
        raise JobError(f"time_limit must be in (0, {MAX_TIME_LIMIT:g}] seconds")
    return list(blocks), limit
