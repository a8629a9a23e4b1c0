"""The Django side of the grader, and the one module of the learner app that runs code through it:
one sandbox pool per process and kind, started lazily; the job an exercise makes; a submission's
verdict; an exercise's verification (the admin's Verify, verify_bank, verify_gpu); an answer's
code blocks. Submitted code only ever runs inside the pool's sandboxes. Elsewhere the learner
app reads only grader.limits and grader.jobs (quizbank/tests/test_layout.py pins it)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings

from grader import SandboxError, SandboxPool, mutate, mutation, probes, verification
from grader.client import grader_failed_result
from grader.limits import MAX_TIME_LIMIT
from quizbank.bank.blocks import Block
from quizbank.models import Exercise, ExerciseVersion

__all__ = ["SandboxError", "SandboxPool"]  # for the commands' types and errors

# What the grader grades against: a version of an exercise (what learners get), or the exercise
# as edited now (the commands that verify the bank as loaded).
Gradable = Exercise | ExerciseVersion

log = logging.getLogger(__name__)

_pools: dict[str, SandboxPool] = {}
_starting: set[str] = set()
_lock = threading.Lock()


def sandbox_pool(kind: str = "cpu") -> SandboxPool:
    with _lock:
        pool = _pools.get(kind)
        if pool is None:
            slots = settings.GRADER_SLOTS if kind == "cpu" else 1
            _starting.add(kind)
            try:
                pool = SandboxPool(
                    python=settings.GRADER_PYTHON,
                    slots=slots,
                    kind="gpu" if kind == "gpu" else "cpu",
                    devices="none" if settings.GRADER_GPU_DEVICES == "none" else "auto",
                )
            finally:
                _starting.discard(kind)
            _pools[kind] = pool
        return pool


def pool_starting(kind: str = "cpu") -> bool:
    """Whether this process's pool of that kind is starting right now (its zygotes import torch,
    10-20 s): a job sent meanwhile waits for it."""
    return kind in _starting


def start_pools(kinds: list[str]) -> None:
    """Start the pools in the background now rather than on the first job, so the first verdict
    after a process (re)starts does not wait for zygotes to import torch. A failure here is the
    first job's to report (as the grader's fault)."""

    def start() -> None:
        for kind in kinds:
            try:
                with contextlib.suppress(Exception):
                    sandbox_pool(kind)
            finally:
                _starting.discard(kind)

    _starting.update(kinds)  # from now: a page rendered before the thread runs says so too
    threading.Thread(target=start, name="warm-grader", daemon=True).start()


def close_pools() -> None:
    with _lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def exercise_job(
    exercise: Gradable, code: str, *, examples: bool = False, diagnose: bool = True
) -> dict[str, Any]:
    """The grader's job. `examples`: only the visible checks (fast feedback that never solves);
    `diagnose=False`: no wrong solutions, so a failure is not matched to one (mutants)."""
    checks = [c for c in exercise.checks if c.get("visible")] if examples else exercise.checks
    return {
        "code": code,
        "reference": exercise.solution_code,
        "checks": checks,
        "forbid": exercise.forbid,
        "time_limit": exercise.fitted_time_limit,
        "memory_limit_mb": exercise.memory_limit_mb,
        "queue": exercise.queue,
        "wrong": exercise.wrong_solutions if diagnose else {},
    }


def grade(
    exercise: Gradable,
    code: str,
    *,
    examples: bool = False,
    diagnose: bool = True,
    measure: bool = True,
) -> dict[str, Any]:
    """The verdict, or a result marked ``grader_failed`` when the sandbox itself cannot run (its
    pool does not start, or its zygotes keep failing: see grader/client.py), which the caller must
    never score against the learner. ``measure=False`` leaves the reference time unrecorded, for a
    caller grading in threads of its own: it records it from its own thread (record_measurement),
    since a write from a worker thread is a connection of its own that the caller's transaction
    does not cover (on SQLite it waits on that transaction's lock)."""
    job = exercise_job(exercise, code, examples=examples, diagnose=diagnose)
    try:
        pool = sandbox_pool(exercise.queue)
    except (SandboxError, OSError) as exc:
        log.error("the grader's sandbox pool did not start: %s", exc)
        return grader_failed_result()
    result = pool.grade(job)
    if measure and not examples:
        record_measurement(exercise, result)
    return result


def grade_mutants(
    exercise: Gradable, *, cache: mutation.KillCache, slots: int
) -> tuple[dict[str, str], int, list[str]]:
    """Mutation testing of one exercise: every mechanical mutant of its reference graded as a
    submission (no diagnosis), ``slots`` at a time; a kill already cached under the mutant's
    content hash is not graded again, nor is an inert one (mutate.Mutant.probe: a surviving float32
    or detach-added mutant's probe is graded next). Returns (mutant id -> status, kills and inert
    mutants read from the cache, mutants the grader failed to grade: never counted as kills)."""
    found = mutate.mutants(exercise.solution_code)
    statuses: dict[str, str] = {}
    cached = 0
    pending = []
    for mutant in found:
        job = exercise_job(exercise, mutant.source, diagnose=False)
        key = mutation.cache_key(mutant.source, job)
        # A kill by the time limit is cached under a key of its own that holds the limit (which
        # moves with the reference's measured time), every other kill under the content alone.
        if cache.killed(key) or cache.killed(mutation.cache_key(mutant.source, job, timed=True)):
            statuses[mutant.id] = "killed (cached)"
            cached += 1
        elif cache.inert(key):
            statuses[mutant.id] = mutation.INERT
            cached += 1
        else:
            pending.append((mutant, job))
    failed: list[str] = []
    try:
        pool = sandbox_pool(exercise.queue)
    except (SandboxError, OSError) as exc:
        log.error("the grader's sandbox pool did not start: %s", exc)
        return statuses, cached, [mutant.id for mutant, _ in pending]

    def run(item: tuple[mutate.Mutant, dict[str, Any]]) -> dict[str, Any]:
        # Straight to the pool: no database write from these threads (a mutant's run says
        # nothing new about the reference's time).
        mutant, job = item
        result = pool.grade(job)
        if result.get("status") == "passed" and mutant.probe is not None:
            # A surviving float32 mutant: did any check give the function a float tensor?
            probe = pool.grade(exercise_job(exercise, mutant.probe, diagnose=False))
            if probe.get("grader_failed"):
                return probe
            if probe["status"] == "passed":
                return {"status": mutation.INERT}
        return result

    with ThreadPoolExecutor(max_workers=max(1, slots)) as executor:
        for (mutant, job), result in zip(pending, executor.map(run, pending), strict=True):
            if result.get("grader_failed"):
                failed.append(mutant.id)
                continue
            status = result["status"]
            statuses[mutant.id] = status
            timed = status == mutation.TIMED_OUT
            key = mutation.cache_key(mutant.source, job, timed=timed)
            if status == mutation.INERT:
                cache.record(key, inert=True)
            elif status != "passed":
                cache.record(key)
    return statuses, cached, failed


def rng_probe(exercise: Gradable) -> str | None:
    """The equivalence probe (grader/probes.py): the reference, drawing from every global random
    stream at each function's entry, graded as a submission (no diagnosis). The problem when it
    fails, None when it passes or the exercise waives it; a grader failure says so."""
    if probes.PROBE_ID in (exercise.mutant_waivers or {}):
        return None
    code = probes.probed(exercise.solution_code)
    try:
        pool = sandbox_pool(exercise.queue)
    except (SandboxError, OSError) as exc:
        log.error("the grader's sandbox pool did not start: %s", exc)
        return f"{probes.PROBE_ID}: the grader failed to grade it"
    result = pool.grade(exercise_job(exercise, code, diagnose=False))
    if result.get("grader_failed"):
        return f"{probes.PROBE_ID}: the grader failed to grade it"
    return probes.problem(result)


def gpu_pool_start() -> SandboxPool:
    """A new one-slot GPU pool of the caller's own (verify_gpu runs several side by side)."""
    devices: Literal["auto", "none"] = "none" if settings.GRADER_GPU_DEVICES == "none" else "auto"
    return SandboxPool(settings.GRADER_PYTHON, slots=1, kind="gpu", devices=devices)


def exercise_verify(
    exercise: Gradable, *, pool: SandboxPool | None = None, measure: bool = True
) -> list[verification.FileVerdict]:
    """Grade the reference, the starter and every wrong solution of a stored exercise (the admin's
    "Verify", verify_bank; verify_gpu on a `pool` of its own). Raises grader.jobs.JobError when the
    grader refuses the exercise itself. ``measure``: as for grade()."""
    files = verification.exercise_files(
        solution=exercise.solution_code,
        starter=exercise.starter_code,
        wrong=exercise.wrong_solutions,
    )
    if pool is None:
        return verification.verify_exercise(
            lambda code: grade(exercise, code, measure=measure), files
        )
    own = pool
    return verification.verify_exercise(lambda code: own.grade(exercise_job(exercise, code)), files)


@dataclass
class BlocksRun:
    """An answer's code blocks, run in one sandbox: how many passed, and each problem as
    `answer.md line N: reason` (or `answer.md: reason` when the run failed as a whole)."""

    passed: int = 0
    problems: list[str] = field(default_factory=list)
    output: str = ""


def answer_blocks_run(blocks: Sequence[Block], *, pool: SandboxPool | None = None) -> BlocksRun:
    """Run an answer's code blocks in order, in one sandbox (a CPU slot unless `pool` is given)."""
    result = (pool or sandbox_pool("cpu")).run_snippets([b.code for b in blocks], MAX_TIME_LIMIT)
    run = BlocksRun(output=result.get("output", ""))
    for block, entry in zip(blocks, result.get("blocks", []), strict=False):
        if entry.get("status") == "passed":
            run.passed += 1
        elif entry.get("status") != "skipped":
            run.problems.append(f"answer.md line {block.line}: {entry.get('message', 'failed')}")
    if result.get("status") != "passed" and not run.problems:
        run.problems.append(f"answer.md: {result.get('message', result.get('status'))}")
    return run


# What a check's code has without importing it (fixtures/bank/README.md), so the learner's lines
# read like the examples they have seen.
SCRATCH_PRELUDE = (
    "import math\nimport torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
)


def scratch_run(exercise: Gradable, code: str, lines: str) -> dict[str, Any]:
    """Try your own input: the learner's code, then their own lines that call it, in one sandbox
    on the exercise's queue and time limit, as an answer's blocks run (no check, no reference:
    nothing is compared or scored). A verdict-shaped result whose output is what they printed."""
    try:
        pool = sandbox_pool(exercise.queue)
    except (SandboxError, OSError) as exc:
        log.error("the grader's sandbox pool did not start: %s", exc)
        return grader_failed_result()
    result = pool.run_snippets([SCRATCH_PRELUDE, code, lines], exercise.fitted_time_limit)
    if result.get("grader_failed"):
        return result
    status = result.get("status", "error")
    message = str(result.get("message", ""))
    for number, name in (("2", "Your code"), ("3", "Your lines")):
        message = message.replace(f"Block {number} ", f"{name} ", 1)
    if status == "passed":
        message = "Your lines ran; what they printed is below."
    return {
        "status": status,
        "message": message.replace("of the block)", "of them)"),
        "checks": [],
        "output": result.get("output", ""),
        "duration_ms": result.get("duration_ms"),
    }


def record_measurement(exercise: Gradable, result: dict[str, Any]) -> None:
    """Store the reference time a full grade measured (only a run of every check measures the
    reference that a submission's limit is fitted to)."""
    reference_ms = result.get("reference_ms")
    if isinstance(reference_ms, int) and reference_ms > 0 and exercise.pk:
        exercise.record_reference_time(reference_ms / 1000)
