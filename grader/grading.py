"""Grading in the zygote: structural rules, the reference's outputs (cached), the submission's run.

The zygote decides every verdict itself. The reference solution runs in a sandbox of its own (it
is exercise content, and the same isolation costs nothing extra); its outputs are cached by the
sha256 of the reference and the checks, so a job normally costs one sandboxed run.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import secrets
import sys
import time
from collections import OrderedDict
from typing import Any, Protocol

from grader import compare, forbid, isolate, jobs, limits, report, verdict
from grader.supervise import Outcome, Run, Supervisor

_CACHE_SIZE = 256
# A check with `seed: per-run` draws its random inputs from a seed the zygote picks (issue 11,
# finding 5): values a submission extracts from hidden checks do not replay. Each exercise's seed
# is kept for SEED_USES grades and then replaced by a fresh one, so the reference's outputs (and
# the wrong solutions', for the diagnosis) are computed once per seed and cached like the rest:
# the extra sandboxed run costs one grade in SEED_USES, not every grade.
SEED_USES = 8


class SeedRotation:
    """Per exercise, the seed its per-run checks use now; drawn with `secrets`, never from the
    submission, and different in every zygote."""

    def __init__(self, uses: int = SEED_USES) -> None:
        self.uses = uses
        self._current: OrderedDict[str, tuple[int, int]] = OrderedDict()  # key -> (seed, left)

    def next(self, job: dict[str, Any]) -> int:
        if not any(check["seed"] == jobs.PER_RUN for check in job["checks"]):
            return 0
        key = hashlib.sha256(
            json.dumps([job["reference"], job["checks"]], sort_keys=True).encode()
        ).hexdigest()
        seed, left = self._current.pop(key, (0, 0))
        if left <= 0:
            seed, left = secrets.randbelow(1 << 31) + 1, self.uses
        self._current[key] = (seed, left - 1)
        if len(self._current) > _CACHE_SIZE:
            self._current.popitem(last=False)
        return seed


class SandboxSetupFailed(Exception):
    """A run's sandbox did not set itself up (its mount point could not be made, or it never
    reported itself isolated), so nothing of the job ran: the grader's failure, which the client
    retries once on a fresh zygote (client.SandboxPool) before it is the site's fault."""


class MountPoint(Protocol):
    def ensure(self) -> str: ...


class Grader:
    """Grades jobs and runs snippets for one zygote, one at a time."""

    def __init__(
        self,
        supervisor: Supervisor,
        *,
        kind: str,
        root: MountPoint,
        prespawn: bool,
        devices: str = "auto",
    ) -> None:
        self.supervisor = supervisor
        self.kind = kind
        self.devices = devices  # "none": the fake (empty) device list, CUDA checks skipped
        self.root = root
        self.prespawn = prespawn and kind == "gpu"
        self._cache: OrderedDict[str, verdict.Reference] = OrderedDict()
        self._wrong_cache: OrderedDict[str, list[report.Step]] = OrderedDict()
        self._wrong_timeouts: dict[str, int] = {}  # runs of a wrong solution that timed out
        self._spare: Run | None = None
        self.seeds = SeedRotation()
        # Whether this slot's runs use a CUDA device, and what the runs said about it.
        self.gpu = False
        self.cuda_detail = "a CPU slot" if kind == "cpu" else ""
        self.refill()
        if kind == "gpu":
            self._probe_cuda()

    def _probe_cuda(self) -> None:
        """Learn from a single-use process whether CUDA really works for this slot's runs.

        The zygote must never initialise CUDA itself (the fork server is forked from it, and
        CUDA does not survive a fork), and "a GPU slot with devices=auto" says nothing about the
        machine. A single-use process initialises CUDA anyway, as each run will, and says in its
        "ready" frame whether that worked, before it has read any job. The process asked is the
        spare the next job will use (or, without prespawning, one started only for this).
        """
        if self.devices == "none":
            self.cuda_detail = "the device list is empty (GRADER_GPU_DEVICES=none)"
            return
        run, self._spare = self._spare, None
        if run is None:
            run = self.supervisor.spawn(mode="exec", memory_mb=limits.DEFAULT_MEMORY_MB)
        ready = self.supervisor.wait_ready(run)
        if ready is None:
            printed = run.early_output.decode("utf-8", "replace")[-1000:]
            print(f"a single-use process did not start:\n{printed}", file=sys.stderr, flush=True)
            self.supervisor.discard(run)
            self.cuda_detail = "a single-use process did not start (see the grader's log)"
            return
        self.gpu = ready.get("cuda") is True
        detail = ready.get("cuda_detail")
        self.cuda_detail = detail if isinstance(detail, str) else ""
        if self.prespawn:
            self._spare = run
        else:
            self.supervisor.discard(run)

    def refill(self) -> None:
        """Keep one single-use process importing torch while no job is waiting (GPU slots)."""
        if self.prespawn and self._spare is None:
            self._spare = self.supervisor.spawn(mode="exec", memory_mb=limits.DEFAULT_MEMORY_MB)

    def grade(self, raw_job: Any) -> dict[str, Any]:
        started = time.monotonic()
        job = jobs.normalize_job(raw_job)
        broken = _broken_exercise(job)
        if broken:  # whatever the submission is, this exercise cannot grade it fairly
            failed = verdict.result("error", broken, seconds=time.monotonic() - started)
            return {**failed, "grader_failed": True, "exercise_fault": True}
        rejection = _rejection(job["code"], job["forbid"])
        if rejection:
            return verdict.result("rejected", rejection, seconds=time.monotonic() - started)
        seed = self.seeds.next(job)
        reference = self._reference(job, seed)
        if isinstance(reference, str):  # not the learner's doing: never their verdict
            failed = verdict.result("error", reference, seconds=time.monotonic() - started)
            return {**failed, "grader_failed": True, "exercise_fault": True}
        if all(reference.skipped):
            message = "Every check of this exercise needs CUDA, which this grader does not have."
            skipped = len(reference.skipped)
            return verdict.result("error", message, skipped=skipped)
        outcome = self._run(_grade_payload(job["code"], job, self.gpu, seed, trap=True), job)
        trapped = _trapped(job, outcome)
        if trapped:
            status, message = trapped
            failed = verdict.result(status, message, seconds=time.monotonic() - started)
            # No armed frame: the sandbox did not set up its traps, so nothing was enforced.
            return {**failed, "grader_failed": True} if status == "error" else failed
        result = verdict.grade(job, reference, outcome, time.monotonic() - started)
        if not _isolated(outcome):  # the sandbox did not start: nothing of the code ran
            result["grader_failed"] = True
        result["diagnosis"] = None
        result["reference_ms"] = round(reference.seconds * 1000)
        if result["status"] == "failed" and job["wrong"]:
            steps = report.read(outcome.frames, step_kind="check", count=len(job["checks"])).steps
            result["diagnosis"] = self._diagnose(job, seed, reference, result["checks"], steps)
        return result

    def _diagnose(
        self,
        job: dict[str, Any],
        seed: int,
        reference: verdict.Reference,
        entries: list[dict[str, Any]],
        steps: list[report.Step],
    ) -> dict[str, str] | None:
        """Which known wrong solution this failing submission behaves like, decided here in the
        trusted zygote with the verdict's own comparison rules, and only when it is certain
        (issue 27): the wrong solution fails exactly the checks the submission fails, and on each
        of them returned the same values within the check's tolerance (so also on the smallest
        failing generated case, which is one of those values) or raised the same exception, class
        and message alike. Two wrong solutions that both match say nothing certain: no diagnosis.

        No guess from the set of failing checks alone: an independent reviewer's unseen mistakes
        that merely failed the same checks as a known one were told the wrong misconception 23
        times in 37. Nothing of the reference or of hidden inputs is in the answer, only a wrong
        solution's name."""
        checks = job["checks"]
        failing = {i for i, entry in enumerate(entries) if entry["status"] == "failed"}
        if not failing or any(e["status"] == "error" for e in entries):
            return None
        matches = []
        for name, code in sorted(job["wrong"].items()):
            wrong_steps = self._wrong_steps(job, code, seed)
            if not wrong_steps:
                continue
            if not all(_same(checks[i], _step(steps, i), _step(wrong_steps, i)) for i in failing):
                continue
            # The same values where the submission fails; it must also fail exactly there and
            # pass every other check. Compared only for such a candidate (this costs a
            # comparison per check).
            same_checks = all(
                verdict.check_entry(check, False, reference.values[i], _step(wrong_steps, i))[
                    "status"
                ]
                == ("failed" if i in failing else "passed")
                for i, check in enumerate(checks)
                if not reference.skipped[i]
            )
            if same_checks:
                matches.append(name)
        if len(matches) != 1:
            return None
        return {"wrong": matches[0], "confidence": "outputs"}

    def _wrong_steps(self, job: dict[str, Any], code: str, seed: int) -> list[report.Step]:
        """A wrong solution's per-check results, run once per zygote and cached like the
        reference's."""
        payload = _grade_payload(code, job, self.gpu, seed, trap=True)
        key = "wrong:" + hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        cached = self._wrong_cache.get(key)
        if cached is not None:
            self._wrong_cache.move_to_end(key)
            return cached
        outcome = self._run(payload, job)
        run = report.read(outcome.frames, step_kind="check", count=len(job["checks"]))
        steps = [] if outcome.malformed or run.malformed else run.steps
        if outcome.timed_out or outcome.out_of_memory:
            # Partial, and maybe only because the machine was busy: no match from it now, and
            # not cached on a first time-out, so the next failing submission on this seed runs
            # it again rather than going without a diagnosis for the seed's every grade. A
            # wrong solution that times out again is cached as giving nothing to match.
            if len(self._wrong_timeouts) > _CACHE_SIZE * 4:  # bounded like the cache
                self._wrong_timeouts.clear()
            self._wrong_timeouts[key] = self._wrong_timeouts.get(key, 0) + 1
            if self._wrong_timeouts[key] < 2:
                return []
            steps = []
        self._wrong_cache[key] = steps
        self._wrong_timeouts.pop(key, None)
        if len(self._wrong_cache) > _CACHE_SIZE * 4:
            self._wrong_cache.popitem(last=False)
        return steps

    def snippets(self, raw_blocks: Any, raw_time_limit: Any) -> dict[str, Any]:
        blocks, time_limit = jobs.normalize_snippets(raw_blocks, raw_time_limit)
        limits = {"time_limit": time_limit, "memory_limit_mb": verdict.SNIPPET_MEMORY_MB}
        outcome = self._run({"mode": "snippets", "blocks": blocks}, limits)
        return verdict.snippets(blocks, outcome, time_limit)

    def _reference(self, job: dict[str, Any], seed: int) -> verdict.Reference | str:
        """The reference's outputs on this run's inputs (cached per seed), or a sentence saying
        how the reference failed."""
        payload = _grade_payload(job["reference"], job, self.gpu, seed, inputs=True)
        key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        outcome = self._run(payload, job)
        run = report.read(outcome.frames, step_kind="check", count=len(job["checks"]))
        ending = verdict.abnormal_end(
            outcome,
            run,
            time_limit=job["time_limit"],
            memory_mb=job["memory_limit_mb"],
            subject="The reference solution",
        )
        failures = [
            f"check {check['name']!r} {step.error.describe(reveal=True, where='the reference')}"
            for check, step in zip(job["checks"], run.steps, strict=False)
            if step.error
        ]
        failures += [
            f"check {check['name']!r} returned {step.unsupported}"
            for check, step in zip(job["checks"], run.steps, strict=False)
            if step.unsupported
        ]
        if ending or failures:
            detail = "; ".join([ending[1], *failures] if ending else failures)
            return f"The exercise's reference solution failed, a bug in the exercise: {detail}"
        reference = verdict.Reference(
            skipped=tuple(step.skipped for step in run.steps),
            values=tuple(step.values for step in run.steps),
            seconds=outcome.seconds,
            cases=tuple(step.cases for step in run.steps),
            segments=tuple(step.segments for step in run.steps),
            inputs=tuple(step.inputs for step in run.steps),
            drawn=tuple(step.drawn for step in run.steps),
        )
        self._cache[key] = reference
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return reference

    def _run(self, payload: dict[str, Any], limits: dict[str, Any]) -> Outcome:
        self.supervisor.collect()
        try:
            root = self.root.ensure()  # recreated if a temp cleaner removed it
        except OSError as error:
            raise SandboxSetupFailed(f"the sandbox's mount point cannot be made: {error}") from None
        mode = "fork" if self.kind == "cpu" else "exec"
        memory_mb = limits["memory_limit_mb"]
        run, self._spare = self._spare, None
        if run is None:
            run = self.supervisor.spawn(mode=mode, memory_mb=memory_mb)
        payload["root"] = root
        payload["limits"] = {
            "time_limit": limits["time_limit"],
            "memory_mb": memory_mb,
            "address_space": self.kind == "cpu",
            "gpu_devices": self.gpu,
            "cgroup_memory": run.cgroup.memory if run.cgroup else None,
            "uid": isolate.sandbox_uid(os.getpid(), run.run_id),
        }
        outcome = self.supervisor.execute(
            run, payload, limits["time_limit"], wait_ready=mode == "exec"
        )
        ready = outcome.frames[0] if outcome.frames else {}
        if ready.get("kind") == "ready" and ready.get("cuda") is not self.gpu:
            # CUDA worked for the first process and not for this one (or the reverse): say so
            # in the log; the run itself skipped or ran its CUDA checks as it could.
            detail = str(ready.get("cuda_detail"))[:500]
            print(f"a single-use process has cuda={ready.get('cuda')}: {detail}", file=sys.stderr)
        if not _isolated(outcome):
            # Nothing of the job ran; what the process printed is the grader's own failure (not
            # the submission's, nor the reference's: it never loaded).
            print(f"sandbox setup failed:\n{outcome.output}", file=sys.stderr, flush=True)
            raise SandboxSetupFailed("the sandbox did not report itself isolated")
        return outcome


def _isolated(outcome: Outcome) -> bool:
    """Whether the sandbox reported itself isolated (before any submitted code could run)."""
    return any(frame.get("kind") == "isolated" for frame in outcome.frames[:2])


def _step(steps: list[report.Step], index: int) -> report.Step:
    return steps[index] if index < len(steps) else report.Step()


def _same(check: dict[str, Any], a: report.Step, b: report.Step) -> bool:
    """Whether two runs did the same on one check: the same values within the check's
    tolerance, or the same exception, class and message (an AssertionError is not the
    ValueError a known mistake raises, nor one ValueError another's)."""
    if a.error is not None or b.error is not None:
        return (
            a.error is not None
            and b.error is not None
            and a.error.type == b.error.type
            and a.error.message == b.error.message
        )
    if a.values is None or b.values is None or a.unsupported or b.unsupported:
        return False
    if len(a.values) != len(b.values):
        return False
    return all(
        compare.difference(y, x, rtol=check["rtol"], atol=check["atol"], reveal=False) is None
        for x, y in zip(a.values, b.values, strict=True)
    )


def _grade_payload(
    code: str,
    job: dict[str, Any],
    gpu: bool,
    seed: int,
    *,
    trap: bool = False,
    inputs: bool = False,
) -> dict[str, Any]:
    """What a sandboxed run gets; ``seed``: the run's seed for `seed: per-run` checks (each
    check gets its own, the others 0); ``trap``: arm the forbid rules (not for the reference,
    whose checks may call what the learner may not); ``inputs``: keep the small generated
    inputs (the reference's run: the learner's counterexample comes from it)."""
    checks = [
        {
            "code": c["code"],
            "compare": c["compare"],
            "requires": c["requires"],
            "seed": (seed + index) % (1 << 31) if c["seed"] == jobs.PER_RUN else 0,
            **({"inputs": True} if inputs else {}),
        }
        for index, c in enumerate(job["checks"])
    ]
    payload = {"mode": "grade", "code": code, "checks": checks, "cuda": gpu}
    if trap and job["forbid"]:
        payload["forbid"] = job["forbid"]
    return payload


def _trapped(job: dict[str, Any], outcome: Outcome) -> tuple[str, str] | None:
    """The verdict when the forbid rules' traps decide it (traps.py), or None.

    A trap's frame is written the moment the forbidden call happens, so a submission cannot
    take it back. A run that set up its sandbox but did not confirm its traps before the code
    ran did not enforce the rules: that is the grader's failure, never a pass.
    """
    if not job["forbid"]:
        return None
    calls = report.forbidden_calls(outcome.frames, job["forbid"])
    if calls:
        names = ", ".join(
            rule + (f" (line {line})" if line is not None else "") for rule, line in calls
        )
        return "rejected", f"Your code called what this exercise forbids: {names}."
    kinds = [frame.get("kind") for frame in outcome.frames[:3]]
    if kinds and kinds[0] == "ready":
        kinds.pop(0)
    if kinds[:1] == ["isolated"] and kinds[1:2] != ["armed"]:
        print("sandbox setup failed: no armed frame", file=sys.stderr, flush=True)
        return "error", "The grader failed internally; this is not a problem with your code."
    return None


def _broken_exercise(job: dict[str, Any]) -> str | None:
    """Why the exercise itself cannot be graded, found on its source before anything runs: its
    reference uses what its forbid list forbids, so correct code would be rejected. (A reference
    that fails its checks is found when it runs: `_reference`.)"""
    if not job["forbid"]:
        return None
    problem = _rejection(job["reference"], job["forbid"])
    if problem is None:
        return None
    return "The exercise's reference solution is refused by its own rules, a bug in the " + (
        "exercise: " + problem.replace("Your code", "it", 1)
    )


def _rejection(code: str, rules: list[str]) -> str | None:
    """Why the source is refused before it runs: too large, does not parse, or a forbidden name."""
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_SOURCE_BYTES:
        return f"Your code is {size} bytes; the limit is {limits.MAX_SOURCE_BYTES} bytes."
    try:
        tree = ast.parse(code, "submission.py")
    except SyntaxError as error:
        return f"Your code does not parse: {error.msg} (line {error.lineno})."
    except (ValueError, RecursionError, MemoryError) as error:
        return f"Your code does not parse: {type(error).__name__}."
    try:
        broken = forbid.violations(tree, rules)
    except (forbid.TooDeep, RecursionError, MemoryError):
        return "Your code is nested too deeply to be checked."
    if broken:
        names = ", ".join(f"{rule} (line {line})" for rule, line in broken)
        return f"Your code uses what this exercise forbids: {names}."
    return None
