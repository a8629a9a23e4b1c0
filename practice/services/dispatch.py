"""Fair dispatch: one learner's submissions never fill a grading queue ahead of everyone else's.

A learner has at most `GRADER_USER_IN_FLIGHT` submissions per queue in the broker or in a grading
slot; the rest wait as rows (`held`), and the oldest is enqueued when one of theirs finishes. The
broker's queue is first in, first out, so a submission waits behind at most that many of each
other learner's: a backlog of slow code from one learner delays another's verdict by about one
run, not by the whole backlog (issue 13, finding 8).

PostgreSQL stays the source of truth: a held row is a queued row without a deadline, and the sweep
releases any whose learner has room (a hand-off lost with a killed worker only waits for it).
Without a broker (grading runs in the request) there is no queue to be fair in, and nothing waits.
"""

from __future__ import annotations

import functools
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User

from ..models import Submission

log = logging.getLogger(__name__)


def held_message(cap: int) -> str:
    runs = "one submission" if cap == 1 else f"{cap} submissions"
    return (
        f"Waiting for your earlier submission to finish: each learner has {runs} graded at a "
        "time, so nobody's code delays anyone else's."
    )


def _cap() -> int:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return 0
    return settings.GRADER_USER_IN_FLIGHT


def _enqueue(submission_id: int, queue: str) -> None:
    from . import submissions  # one way to send a submission to the broker, not two

    submissions._enqueue(submission_id, queue)


def _lock_user(user_id: int) -> None:
    """Serialises the decisions about one learner's submissions (dispatch and release)."""
    list(User.objects.select_for_update().filter(pk=user_id).values_list("pk", flat=True))


def _in_flight(*, user_id: int, queue: str) -> int:
    return Submission.objects.unfinished().filter(user_id=user_id, queue=queue, held=False).count()


def submission_dispatch(*, submission: Submission) -> None:
    """Enqueue a stored, queued submission once its row is committed, or hold it while its
    learner has `GRADER_USER_IN_FLIGHT` others in flight on the same queue."""
    cap = _cap()
    if cap <= 0:
        transaction.on_commit(functools.partial(_enqueue, submission.pk, submission.queue))
        return
    with transaction.atomic():
        _lock_user(submission.user_id)
        others = _in_flight(user_id=submission.user_id, queue=submission.queue) - 1
        if others < cap:
            transaction.on_commit(functools.partial(_enqueue, submission.pk, submission.queue))
            return
        submission.held = True
        # Kept after ours: "no GPU worker is online" still applies to a held GPU submission.
        submission.message = " ".join(filter(None, [held_message(cap), submission.message]))
        submission.deadline_at = None  # the sweep releases it; it re-enqueues only what is sent
        submission.save(update_fields=["held", "message", "deadline_at"])


def user_release_held(*, user_id: int, queue: str) -> int:
    """Enqueue the learner's oldest held submissions on `queue`, as many as they have room for.
    Returns how many were released."""
    from .submissions import _mark_queued

    cap = _cap()
    with transaction.atomic():
        _lock_user(user_id)
        held = Submission.objects.filter(
            user_id=user_id, queue=queue, held=True, status=Submission.Status.QUEUED
        )
        room = len(held) if cap <= 0 else cap - _in_flight(user_id=user_id, queue=queue)
        if room <= 0:
            return 0
        released = list(held.order_by("queued_at", "id").select_for_update()[:room])
        now = timezone.now()
        for submission in released:
            submission.held = False
            _mark_queued(submission, now=now)
            submission.save(update_fields=["held", "status", "message", "deadline_at"])
            transaction.on_commit(functools.partial(_enqueue, submission.pk, submission.queue))
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
