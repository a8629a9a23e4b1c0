"""Workflows around submissions: create (and enqueue), grade, and sweep what got stuck."""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from grader.jobs import JobError
from grader.limits import MAX_OUTPUT_CHARS
from quizbank.bank.schema import wrong_solution_notes
from quizbank.models import Exercise, Question

from .. import grader_client, workers
from ..models import MAX_CODE_BYTES, MAX_TRIES, Submission
from . import dispatch, learning

log = logging.getLogger(__name__)

NO_GPU_WORKER = (
    "No GPU worker is online: this submission waits in the GPU queue and is graded as soon as one "
    "connects."
)
GRADED_ON_CPU = (
    "Graded on the CPU because this site has no GPU worker; GPU-only checks were skipped."
)


def submission_create(
    *, user: User, question: Question, code: str, mode: str = Submission.Mode.SUBMIT
) -> Submission:
    """Store a submission and enqueue its grading once the row is committed. `mode` "examples"
    runs only the visible checks; such a run is never scored and never solves the question.

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
        raise ValidationError({"mode": "Use submit or examples."})
    submission = Submission(
        user=user, question=question, code=code, queue=exercise.queue, mode=mode
    )
    _mark_queued(submission, now=timezone.now())
    submission.full_clean()
    submission.save()
    dispatch.submission_dispatch(submission=submission)  # enqueued on commit, or held (fairness)
    return submission


def _mark_queued(submission: Submission, *, now: Any) -> None:
    submission.status = Submission.Status.QUEUED
    if submission.queue == Submission.Queue.GPU and not settings.CELERY_TASK_ALWAYS_EAGER:
        waiting = not workers.gpu_worker_online()
        submission.message = NO_GPU_WORKER if waiting else ""
        submission.deadline_at = now + timedelta(seconds=settings.GRADER_GPU_QUEUE_DEADLINE)
    else:
        submission.message = ""
        submission.deadline_at = now + timedelta(seconds=settings.GRADER_QUEUE_DEADLINE)


def _enqueue(submission_id: int, queue: str) -> None:
    from ..tasks import grade_submission

    grade_submission.apply_async(args=[submission_id], queue=queue)


def submission_grade(*, submission_id: int, worker: str) -> Submission | None:
    """Grade one submission in the sandbox and store its verdict.

    Safe to call again for a submission (a redelivered task): a finished one is left as is."""
    with transaction.atomic():
        submission = (
            Submission.objects.select_for_update(of=("self",))
            .select_related("question__exercise")
            .filter(pk=submission_id)
            .first()
        )
        if submission is None or submission.finished:
            return submission
        exercise = submission.question.exercise
        submission.status = Submission.Status.RUNNING
        submission.tries += 1
        submission.worker = worker[:200]
        submission.started_at = timezone.now()
        margin = settings.GRADER_RUNNING_MARGIN
        submission.deadline_at = submission.started_at + timedelta(
            seconds=exercise.time_limit + margin
        )
        submission.save(update_fields=["status", "tries", "worker", "started_at", "deadline_at"])

    examples = submission.mode == Submission.Mode.EXAMPLES
    learners_fault = True
    try:
        verdict = grader_client.grade(exercise, submission.code, examples=examples)
    except JobError as exc:
        learners_fault = False
        # The exercise itself is broken (saved past validation, or a bank bug): the learner gets a
        # final answer at once, and the curators a log line naming the exercise.
        log.error("exercise %s cannot be graded: %s", submission.question.slug, exc)
        verdict = {
            "status": Submission.Status.ERROR,
            "message": (
                "This exercise cannot be graded right now: it is being fixed. Your code was kept; "
                f"submit again later. (Reason: {exc})"
            ),
        }
    submission.status = verdict["status"]
    submission.checks = [
        {
            "name": c["name"],
            "status": c["status"],
            "message": c.get("message", ""),
            "visible": c.get("visible", False),
        }
        for c in verdict.get("checks", [])
    ]
    submission.message = verdict.get("message", "")
    if exercise.queue == Submission.Queue.GPU and verdict.get("skipped"):
        submission.message = f"{submission.message} {GRADED_ON_CPU}".strip()
    submission.diagnosis = _diagnosis(exercise, verdict.get("diagnosis"))
    submission.output = verdict.get("output", "")[:MAX_OUTPUT_CHARS]
    submission.duration_ms = verdict.get("duration_ms")
    submission.finished_at = timezone.now()
    submission.deadline_at = None
    submission.save()
    if learners_fault and not examples:  # a broken exercise is never scored against the learner
        learning.verdict_record(submission=submission)
    dispatch.user_release_held(user_id=submission.user_id, queue=submission.queue)
    return submission


def _diagnosis(exercise: Exercise, found: Any) -> dict[str, str] | None:
    """The learner-facing diagnosis: the misconception and hint the matching wrong solution
    declares (never its code or name)."""
    if not isinstance(found, dict):
        return None
    code = exercise.wrong_solutions.get(found.get("wrong"))
    notes = wrong_solution_notes(code) if isinstance(code, str) else None
    if notes is None or found.get("confidence") not in ("outputs", "pattern"):
        return None
    return {**notes, "confidence": found["confidence"]}


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
            locked.status = Submission.Status.ERROR
            locked.message = LOST_IN_PROCESS
            locked.finished_at = now
            locked.deadline_at = None
            locked.save(update_fields=["status", "message", "finished_at", "deadline_at"])
    submission.refresh_from_db()
    return submission


def submission_sweep(*, now: Any = None) -> dict[str, int]:
    """Re-enqueue submissions stuck past their deadline; after MAX_TRIES, fail them with a reason.

    A submission is a row before it is a message, so a lost message or a killed worker only delays
    its verdict."""
    now = now or timezone.now()
    requeued = failed = 0
    with transaction.atomic():
        stuck = (
            Submission.objects.unfinished()
            .filter(deadline_at__lt=now)
            .select_for_update(skip_locked=True)
        )
        for submission in stuck:
            if submission.tries >= MAX_TRIES:
                submission.status = Submission.Status.ERROR
                submission.message = (
                    f"Grading did not finish after {MAX_TRIES} tries"
                    + (" (no GPU worker picked it up)" if submission.queue == "gpu" else "")
                    + ". Please submit again; if it keeps happening, tell us."
                )
                submission.finished_at = now
                submission.deadline_at = None
                failed += 1
            else:
                submission.tries += 1
                _mark_queued(submission, now=now)
                pk, queue = submission.pk, submission.queue
                transaction.on_commit(functools.partial(_enqueue, pk, queue))
                requeued += 1
            submission.save()
    if requeued or failed:
        log.warning("sweep: %d re-enqueued, %d failed", requeued, failed)
    dispatch.held_release_all()  # held rows whose learner has room (a lost hand-off)
    return {"requeued": requeued, "failed": failed}
