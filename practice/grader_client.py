"""The Django side's handle on the grader: one sandbox pool per process and kind, started lazily,
and the job an exercise makes. Submitted code only ever runs inside the pool's sandboxes."""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from grader import SandboxPool
from quizbank.models import Exercise

_pools: dict[str, SandboxPool] = {}
_lock = threading.Lock()


def sandbox_pool(kind: str = "cpu") -> SandboxPool:
    with _lock:
        pool = _pools.get(kind)
        if pool is None:
            slots = settings.GRADER_SLOTS if kind == "cpu" else 1
            pool = SandboxPool(
                python=settings.GRADER_PYTHON, slots=slots, kind="gpu" if kind == "gpu" else "cpu"
            )
            _pools[kind] = pool
        return pool


def close_pools() -> None:
    with _lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def exercise_job(exercise: Exercise, code: str, *, examples: bool = False) -> dict[str, Any]:
    """The grader's job. `examples`: only the visible checks (fast feedback that never solves)."""
    checks = [c for c in exercise.checks if c.get("visible")] if examples else exercise.checks
    return {
        "code": code,
        "reference": exercise.solution_code,
        "checks": checks,
        "forbid": exercise.forbid,
        "time_limit": exercise.fitted_time_limit,
        "memory_limit_mb": exercise.memory_limit_mb,
        "queue": exercise.queue,
        "wrong": exercise.wrong_solutions,
    }


def grade(exercise: Exercise, code: str, *, examples: bool = False) -> dict[str, Any]:
    result = sandbox_pool(exercise.queue).grade(exercise_job(exercise, code, examples=examples))
    reference_ms = result.get("reference_ms")
    # Only a run of every check measures the reference that a submission's limit is fitted to.
    if not examples and isinstance(reference_ms, int) and reference_ms > 0 and exercise.pk:
        exercise.record_reference_time(reference_ms / 1000)
    return result
