"""Fair dispatch: one learner's submissions never fill a grading queue ahead of everyone else's.

A learner has at most `GRADER_USER_IN_FLIGHT` submissions per queue in the broker or in a grading
slot; the rest wait as rows (`held`), and the oldest is enqueued when one of theirs finishes. The
broker's queue is first in, first out, so a submission waits behind at most that many of each
other learner's: a backlog of slow code from one learner delays another's verdict by about one
run, not by the whole backlog (issue 13, finding 8).

PostgreSQL stays the source of truth: a held row is a queued row without a deadline, and the sweep
releases any whose learner has room (a hand-off lost with a killed worker only waits for it).
Without a broker (grading runs in the request) there is no queue to be fair in, and nothing waits.

This module is also the one hand-off to the broker: the only importer of `practice.tasks`.
"""

from __future__ import annotations

import functools
import logging

import kombu.exceptions
import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from quizbank import errors

from .. import workers
from ..models import Submission

log = logging.getLogger(__name__)

# What a broker outage raises (Redis is the broker): the caller answers 503, not 500.
BROKER_ERRORS = (kombu.exceptions.OperationalError, redis.exceptions.ConnectionError, OSError)


class GradingUnavailable(errors.Unavailable):
    """The broker cannot take the submission right now; nothing was stored."""


def held_message(cap: int) -> str:
    runs = "one submission" if cap == 1 else f"{cap} submissions"
    return (
        f"Waiting for your earlier submission to finish: each learner has {runs} graded at a "
        "time, so nobody's code delays anyone else's."
    )


def worker_online(queue: str) -> bool:
    """What a queued submission tells its learner: grading in this process needs no worker."""
    return settings.CELERY_TASK_ALWAYS_EAGER or workers.queue_has_worker(queue)


def submission_dispatch(*, submission: Submission) -> None:
    """Send a stored, queued submission to the broker (or hold it for fairness).

    Inside the caller's transaction the message goes once the row commits; outside one, a broker
    that cannot take it raises GradingUnavailable and the row is deleted, so nothing waits for a
    broker nobody knows is down."""
    if submission_hold(submission=submission):
        return  # it waits for the learner's earlier submission (fairness)
    if transaction.get_connection().in_atomic_block:
        # The row commits later, with the caller's transaction; if the broker is away then, the
        # row stays queued and the sweep sends it once the broker is back.
        transaction.on_commit(lambda: enqueue_or_leave_to_sweep(submission.pk, submission.queue))
        return
    if settings.CELERY_TASK_ALWAYS_EAGER:  # graded here and now: no broker to lose
        enqueue(submission.pk, submission.queue)
        return
    try:
        enqueue(submission.pk, submission.queue)
    except BROKER_ERRORS as exc:
        submission.delete()
        raise GradingUnavailable(
            "The grading queue is unavailable; nothing was stored. Retry later."
        ) from exc


def enqueue(submission_id: int, queue: str) -> None:
    """Publish the grading task for one submission (the task takes the id and re-queries)."""
    # Imported here: the task calls the services that call this (the one loop Celery imposes).
    from ..tasks import grade_submission

    grade_submission.apply_async(
        args=[submission_id], queue=queue, retry_policy=settings.GRADER_PUBLISH_RETRY_POLICY
    )


def exercise_version_dispatch(version_id: int) -> None:
    """Send a new exercise version to a CPU worker for verification once the caller's
    transaction commits (the admin's save or Verify). Without a broker it is verified here and
    now, in this process, as submissions are graded. A broker away leaves the version verifying;
    the admin's Verify sends it again."""

    def send() -> None:
        from ..tasks import verify_exercise_version

        try:
            verify_exercise_version.apply_async(
                args=[version_id], queue="cpu", retry_policy=settings.GRADER_PUBLISH_RETRY_POLICY
            )
        except BROKER_ERRORS:
            log.warning("broker unavailable; exercise version %s not sent to verify", version_id)

    transaction.on_commit(send)


def enqueue_or_leave_to_sweep(submission_id: int, queue: str) -> None:
    """Publish after the row committed; a broker away leaves the row due now, for the sweep."""
    try:
        enqueue(submission_id, queue)
    except BROKER_ERRORS:
        # Committed but not sent: due now, so the first sweep after the broker returns sends it.
        log.warning("broker unavailable; submission %s left to the sweep", submission_id)
        Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
            deadline_at=timezone.now()
        )


def _cap() -> int:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return 0
    return settings.GRADER_USER_IN_FLIGHT


def _lock_user(user_id: int) -> None:
    """Serialises the decisions about one learner's submissions (dispatch and release)."""
    list(User.objects.select_for_update().filter(pk=user_id).values_list("pk", flat=True))


def _in_flight(*, user_id: int, queue: str) -> int:
    return Submission.objects.unfinished().filter(user_id=user_id, queue=queue, held=False).count()


def submission_hold(*, submission: Submission) -> bool:
    """Hold a stored, queued submission while its learner has `GRADER_USER_IN_FLIGHT` others in
    flight on the same queue. False: the caller sends it now."""
    cap = _cap()
    if cap <= 0:
        return False
    with transaction.atomic():
        _lock_user(submission.user_id)
        others = _in_flight(user_id=submission.user_id, queue=submission.queue) - 1
        if others < cap:
            return False
        submission.mark_held(reason=held_message(cap))
    return True


def user_release_held(*, user_id: int, queue: str) -> int:
    """Enqueue the learner's oldest held submissions on `queue`, as many as they have room for.
    Returns how many were released."""
    cap = _cap()
    # Inside a caller's transaction (a verdict's), no savepoint: it commits or fails with it.
    with transaction.atomic(savepoint=False):
        _lock_user(user_id)
        held = Submission.objects.filter(
            user_id=user_id, queue=queue, held=True, status=Submission.Status.QUEUED
        ).order_by("queued_at", "id")
        if cap <= 0:
            released = list(held.select_for_update())
        else:
            # The oldest first: the common case (nothing held) costs this one query.
            released = list(held.select_for_update()[:cap])
            room = cap - _in_flight(user_id=user_id, queue=queue) if released else 0
            released = released[: max(room, 0)]
        if not released:
            return 0
        now = timezone.now()
        online = worker_online(queue)
        for submission in released:
            submission.mark_queued(now=now, worker_online=online)
            transaction.on_commit(
                functools.partial(enqueue_or_leave_to_sweep, submission.pk, submission.queue)
            )
    return len(released)


def held_release_all() -> int:
    """Release what every learner has room for (the sweep's step: a hand-off is never lost)."""
    pairs = (
        Submission.objects.filter(held=True, status=Submission.Status.QUEUED)
        .values_list("user_id", "queue")
        .distinct()
    )
    released = sum(user_release_held(user_id=user, queue=queue) for user, queue in list(pairs))
    if released:
        log.info("sweep: released %d held submissions", released)
    return released
