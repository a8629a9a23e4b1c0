"""Workflows around submissions: create (and hand to services/dispatch.py), grade, and end one
lost with the process that graded it. The status changes themselves are `Submission` methods."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from accounts import throttling
from accounts.models import User
from grader.jobs import JobError
from grader.limits import MAX_OUTPUT_CHARS
from quizbank import errors
from quizbank.bank.schema import wrong_solution_notes
from quizbank.models import ExerciseVersion, Question, Queue

from .. import grader_client
from ..models import MAX_CODE_BYTES, Submission
from ..models.submissions import no_worker_message
from . import dispatch, learning, review
from .dispatch import GradingUnavailable

__all__ = [
    "GradingUnavailable",
    "SubmissionBudgetExceeded",
    "submission_create",
    "submission_create_once",
    "submission_grade",
]

log = logging.getLogger(__name__)

# Kept importable from here: the views and tests name them through this module.
NO_WORKER = {queue: no_worker_message(queue) for queue in Queue.values}
NO_GPU_WORKER = NO_WORKER[Queue.GPU]
GRADER_FAILED = (
    "The grader failed while grading this submission; this is a problem on our side, not in your "
    "code, and it does not count as an attempt. Your code was kept; please submit again. "
    "(Reason: {reason})"
)
# A verdict on the exercise rather than on the code: never scored, and the staff are told.
EXERCISE_BROKEN = "This exercise is being fixed; your attempt is not counted; staff have been told."
UNVERIFIED = (
    "This exercise is waiting for the grader to verify it; your attempt is not counted. "
    "Your code was kept; please submit again in a minute."
)
GRADED_ON_CPU = (
    "Graded on the CPU because this site has no GPU worker; GPU-only checks were skipped."
)


def submission_create_once(
    *, user: User, idempotency_key: str, **fields: Any
) -> tuple[Submission, bool]:
    """submission_create() unless `user` already made a submission under `idempotency_key`:
    then that one, unchanged. Returns (submission, created)."""
    existing = Submission.objects.filter(user=user, idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing, False
    try:
        # Not in a transaction of its own: submission_create() decides when to enqueue by
        # whether the caller holds one.
        return submission_create(user=user, idempotency_key=idempotency_key, **fields), True
    except IntegrityError:  # the same key, sent twice at once: the other request stored it
        return Submission.objects.get(user=user, idempotency_key=idempotency_key), False


def submission_create(
    *,
    user: User,
    question: Question,
    code: str,
    mode: str = Submission.Mode.SUBMIT,
    idempotency_key: str = "",
    scratch: str = "",
) -> Submission:
    """Store a submission and enqueue its grading once the row is committed. `mode` "examples"
    runs only the visible checks; "scratch" runs the code then `scratch`, the learner's own lines,
    and shows what they print. Neither is ever scored nor solves the question.

    Preconditions: `question` is visible to `user`. Raises ValidationError naming the field."""
    exercise = getattr(question, "exercise", None)
    if exercise is None:
        raise ValidationError({"question": "This question has no code exercise to submit to."})
    size = len(code.encode("utf-8"))
    if size > MAX_CODE_BYTES:
        raise ValidationError(
            {"code": f"The code is {size} bytes; the limit is {MAX_CODE_BYTES >> 10} KiB."}
        )
    if not code.strip():
        raise ValidationError({"code": "The code is empty."})
    if mode not in Submission.Mode.values:
        raise ValidationError({"mode": "Use submit, examples or scratch."})
    if mode == Submission.Mode.SCRATCH:
        if not scratch.strip():
            raise ValidationError({"scratch": "Write a few lines that call your code."})
        if len(scratch.encode("utf-8")) > MAX_CODE_BYTES:
            raise ValidationError({"scratch": f"Your lines are over {MAX_CODE_BYTES >> 10} KiB."})
    elif scratch:
        raise ValidationError({"scratch": "Your own lines run only with mode scratch."})
    _spend_budget(user=user)
    submission = Submission(
        user=user,
        question=question,
        code=code,
        queue=exercise.queue,
        mode=mode,
        scratch=scratch,
        idempotency_key=idempotency_key,
    )
    # The fields, without a query per foreign key and constraint (six round trips per POST): the
    # caller passes rows it read, and the database enforces the constraints.
    submission.full_clean(exclude=["user", "question"], validate_constraints=False)
    online = dispatch.worker_online(submission.queue)
    submission.mark_queued(now=timezone.now(), worker_online=online)
    dispatch.submission_dispatch(submission=submission)
    return submission


class SubmissionBudgetExceeded(errors.LimitReached):
    """The learner's budget is spent (too many submissions a minute, or too many waiting for a
    verdict): nothing was stored. The API answers 429 with Retry-After: `retry_after` seconds."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__("code", message, retry_after=retry_after)


PERIODS = {"s": 1, "sec": 1, "min": 60, "hour": 3600, "day": 86400}


def _rate() -> tuple[int, int]:
    count, _, period = settings.SUBMISSION_RATE.partition("/")
    return int(count), PERIODS[period]


def _spend_budget(*, user: User) -> None:
    """One budget per learner, spent here since every path to the grader comes here: the page,
    the API, an interview's code answer and a code review. Raises SubmissionBudgetExceeded."""
    waiting = Submission.objects.filter(user=user).unfinished().count()
    if waiting >= settings.SUBMISSIONS_WAITING_MAX:
        raise SubmissionBudgetExceeded(
            f"You have {waiting} submissions waiting for their verdicts; send the next one "
            "once they are graded.",
            retry_after=5,
        )
    limit, window = _rate()
    if throttling.rate_limited(
        action="submissions", key=f"user:{user.pk}", limit=limit, window=window
    ):
        raise SubmissionBudgetExceeded(
            "You are submitting very fast; wait a minute and try again.", retry_after=window
        )


def submission_grade(*, submission_id: int, worker: str) -> Submission | None:
    """Grade one submission in the sandbox and store its verdict.

    Safe to call again for a submission (a redelivered task, a sweep's re-send): a finished one is
    left as is, one that another worker is grading under a live lease is left to it, and of two
    runs that both finish, only the first stores (and scores) its verdict."""
    submission, ours = _grading_start(submission_id=submission_id, worker=worker)
    if submission is None or not ours:
        return submission
    # Learners are graded against the newest verified version; staff against the newest one.
    version = submission.question.exercise.version_for(submission.user)
    examples = submission.mode == Submission.Mode.EXAMPLES
    scored = submission.mode == Submission.Mode.SUBMIT
    if version is None:
        log.warning("exercise %s has no verified version yet", submission.question.slug)
        verdict: dict[str, Any] = {"status": Submission.Status.ERROR, "message": UNVERIFIED}
        learners_fault = False
    else:
        with _lease(submission_id=submission.pk, tries=submission.tries):
            verdict, learners_fault = _grade_in_sandbox(submission, version, examples=examples)
    with transaction.atomic():
        current = (
            Submission.objects.select_for_update(of=("self",))
            .select_related("user", "question")
            .filter(pk=submission.pk)
            .first()
        )
        if current is None or current.finished:
            return current  # another run of the same code finished first; it was scored once
        _store_verdict(current, version, verdict)
        if learners_fault and scored:  # the grader's own failure is never scored
            counted = learning.verdict_record(submission=current)
            now = current.finished_at or timezone.now()
            if counted and not review.code_review_verdict(submission=current, now=now):
                learning.verdict_schedule(submission=current)
        # In the verdict's transaction: one commit per verdict, not two (throughput, issue 28).
        dispatch.user_release_held(user_id=current.user_id, queue=current.queue)
        if current.heavy:  # its place in the heavy lane is free: the lane's next, whoever's
            queue = current.queue
            transaction.on_commit(lambda: dispatch.lane_release(queue=queue))
    return current


def _grading_start(*, submission_id: int, worker: str) -> tuple[Submission | None, bool]:
    """Mark the row running under this worker's lease; (row, False) when it is not ours."""
    now = timezone.now()
    with transaction.atomic():
        submission = (
            Submission.objects.select_for_update(of=("self",))
            .select_related("question__exercise", "user")  # version_for reads user.is_staff
            .filter(pk=submission_id)
            .first()
        )
        if submission is None or submission.finished:
            return submission, False
        leased = submission.deadline_at is not None and submission.deadline_at > now
        if submission.status == Submission.Status.RUNNING and leased:
            return submission, False  # a live worker is grading it
        submission.mark_running(worker=worker, now=now)
    return submission, True


@contextlib.contextmanager
def _lease(*, submission_id: int, tries: int) -> Iterator[None]:
    """While grading, renew the running row's deadline every third of GRADER_LEASE_SECONDS.

    A worker that dies (SIGKILL, lost host) stops renewing, so the sweep re-sends its submission
    within a lease instead of waiting out the whole time limit; a live worker's row is never taken
    from it. A renewal that fails (the database away for a moment) is tried again next time."""
    seconds = settings.GRADER_LEASE_SECONDS
    if transaction.get_connection().in_atomic_block:
        # The caller's transaction holds the row (a test, a shell): nobody else can see it, and a
        # renewal from another connection would wait on that transaction's lock forever.
        yield
        return
    stop = threading.Event()

    def renew() -> None:
        try:
            while not stop.wait(seconds / 3):
                with contextlib.suppress(DatabaseError):
                    Submission.objects.filter(
                        pk=submission_id, status=Submission.Status.RUNNING, tries=tries
                    ).update(deadline_at=timezone.now() + timedelta(seconds=seconds))
        finally:
            db_connection.close()  # this thread's own connection

    renewer = threading.Thread(target=renew, name=f"lease-{submission_id}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()


def _grade_in_sandbox(
    submission: Submission, exercise: ExerciseVersion, *, examples: bool
) -> tuple[dict[str, Any], bool]:
    """The verdict, and whether it is the learner's (False: the exercise or the grader failed)."""
    try:
        if submission.mode == Submission.Mode.SCRATCH:
            verdict = grader_client.scratch_run(exercise, submission.code, submission.scratch)
        else:
            verdict = grader_client.grade(exercise, submission.code, examples=examples)
    except JobError as exc:  # the grader refuses the exercise's job (a bank bug)
        return _exercise_broken(submission, exercise, f"the grader refuses its job: {exc}"), False
    if verdict.get("exercise_fault"):
        return _exercise_broken(submission, exercise, verdict.get("message", "")), False
    if verdict.get("grader_failed"):
        # The sandbox itself failed, on a fresh zygote too (grader/client.py retried it): the
        # grader's fault, stated as such and never scored.
        log.error("grader failed on submission %s: %s", submission.pk, verdict.get("message"))
        reason = verdict.get("message", "")
        return {**verdict, "message": GRADER_FAILED.format(reason=reason), "checks": []}, False
    return verdict, True


def _exercise_broken(
    submission: Submission, version: ExerciseVersion, reason: str
) -> dict[str, Any]:
    """The exercise itself is at fault: the learner gets a final answer at once that says their
    attempt is not counted; the staff a log line and the exercise's fault (the admin's filter)."""
    log.error(
        "exercise %s is broken (version %s; submission %s not counted): %s",
        submission.question.slug,
        version.number,
        submission.pk,
        reason,
    )
    version.exercise.record_fault(f"version {version.number}: {reason}")
    return {"status": Submission.Status.ERROR, "message": EXERCISE_BROKEN, "checks": []}


def _store_verdict(
    submission: Submission, exercise: ExerciseVersion | None, verdict: dict[str, Any]
) -> None:
    message = verdict.get("message", "")
    if exercise is not None and exercise.queue == Queue.GPU and verdict.get("skipped"):
        message = f"{message} {GRADED_ON_CPU}".strip()
    submission.mark_finished(
        status=verdict["status"],
        message=message,
        checks=[
            {
                "name": c["name"],
                "status": c["status"],
                "message": c.get("message", ""),
                "visible": c.get("visible", False),
                **_counterexample(c.get("counterexample")),
            }
            for c in verdict.get("checks", [])
        ],
        diagnosis=_diagnosis(exercise, verdict.get("diagnosis")) if exercise else None,
        output=verdict.get("output", "")[:MAX_OUTPUT_CHARS],
        duration_ms=verdict.get("duration_ms"),
        now=timezone.now(),
        exercise_version=exercise,
    )


def _diagnosis(exercise: ExerciseVersion, found: Any) -> dict[str, str] | None:
    """The learner-facing diagnosis: the misconception, hint and (where the bank has one) the
    correction the matching wrong solution declares, never its code or name. Only a certain
    match ("outputs"): the grader no longer guesses from the set of failing checks."""
    if not isinstance(found, dict) or found.get("confidence") != "outputs":
        return None
    code = exercise.wrong_solutions.get(found.get("wrong"))
    notes = wrong_solution_notes(code) if isinstance(code, str) else None
    if notes is None:
        return None
    return {**notes, "confidence": "outputs"}


# grader.gen.ORDINARY, the ordinary random family (gen imports torch, which the site has not).
ORDINARY_FAMILY = "ordinary"
_COUNTEREXAMPLE_TEXT = ("family", "where", "input", "at", "expected", "got", "property", "detail")


def _counterexample(found: Any) -> dict[str, Any]:
    """A check's smallest failing generated case as the grader described it (grader/feedback.py),
    kept to its known fields, each text bounded."""
    if not isinstance(found, dict):
        return {}
    kept: dict[str, Any] = {
        key: found[key][:2000] for key in _COUNTEREXAMPLE_TEXT if isinstance(found.get(key), str)
    }
    if isinstance(found.get("size"), int):
        kept["size"] = found["size"]
    if isinstance(found.get("passing_families"), list):
        kept["every_family"] = not found["passing_families"]
    # Differing on ordinary inputs, the smallest case's family (often "empty") is not where the
    # mistake lies, and is not offered as if it were.
    if isinstance(found.get("failing_families"), list):
        kept["ordinary_fails"] = ORDINARY_FAMILY in found["failing_families"]
    if found.get("also_drawn") is True:
        kept["also_drawn"] = True
    return {"counterexample": kept} if "family" in kept and "expected" in kept else {}


LOST_IN_PROCESS = (
    "Grading did not finish: the server stopped while it was grading this submission. "
    "Your code was kept; please submit again."
)


def submission_settle_overdue(*, submission: Submission, now: Any = None) -> Submission:
    """Without a broker (the embedded default) grading runs inside the request and no beat sweeps:
    a submission still unfinished past its deadline was lost with the process that graded it.
    End it as an error with that reason, so nobody waits for it forever. With a broker the sweep
    does this (and retries first)."""
    now = now or timezone.now()
    if not settings.CELERY_TASK_ALWAYS_EAGER or submission.finished:
        return submission
    if submission.deadline_at is None or submission.deadline_at >= now:
        return submission
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission.pk)
        if not locked.finished:
            locked.mark_failed(reason=LOST_IN_PROCESS, now=now)
    submission.refresh_from_db()
    return submission
