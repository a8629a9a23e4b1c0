"""Fair dispatch: one learner's submissions never fill a grading queue ahead of everyone else's.

A learner has at most `GRADER_USER_IN_FLIGHT` submissions per queue in the broker or in a grading
slot; the rest wait as rows (`held`), and the oldest is enqueued when one of theirs finishes. The
broker's queue is first in, first out, so a submission waits behind at most that many of each
other learner's: a backlog of slow code from one learner delays another's verdict by about one
run, not by the whole backlog (issue 13, finding 8).

Heavy learners (more than GRADER_HEAVY_SECONDS of code run in the last GRADER_HEAVY_WINDOW, or
most of their runs in it out of time) also share a lane: together they have at most
GRADER_HEAVY_IN_FLIGHT CPU submissions in flight (a worker's slots less one), so a learner who
grades little finds a slot free instead of waiting for a sleeping run to end (issue 28: 3.3x the
idle p95 beside four abusive accounts). A heavy submission the lane has no room for waits as a
held row marked `heavy`; the lane is first come, first served across learners, and each heavy
verdict sends the next.

PostgreSQL stays the source of truth: a held row is a queued row without a deadline, and the sweep
releases any whose learner has room (a hand-off lost with a killed worker only waits for it).
Without a broker (grading runs in the request) there is no queue to be fair in, and nothing waits.

This module is also the one hand-off to the broker: the only importer of `practice.tasks`.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta

import kombu.exceptions
import redis
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from accounts.models import User
from quizbank import errors
from quizbank.models import Queue

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


def lane_message(lane: int) -> str:
    slots = "one grading slot" if lane == 1 else f"{lane} grading slots"
    window = settings.GRADER_HEAVY_WINDOW
    recently = "minute" if window == 60 else f"{window} seconds"
    return (
        f"Waiting for a grading slot: learners who ran much code in the last {recently} share "
        f"{slots}, so that everyone else's verdicts are not held up."
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


def user_lock(user_id: int) -> None:
    """Serialises the decisions about one learner's submissions (dispatch and release) and
    interviews (the day's limit). Taken before any other learner's lock, or none."""
    list(User.objects.select_for_update().filter(pk=user_id).values_list("pk", flat=True))


def _in_flight(*, user_id: int, queue: str) -> int:
    return Submission.objects.unfinished().filter(user_id=user_id, queue=queue, held=False).count()


def _lane(queue: str) -> int:
    """How many submissions heavy learners may have in flight on `queue` together; 0: no lane
    (no per-learner cap, the GPU queue's single slot, or GRADER_HEAVY_IN_FLIGHT 0)."""
    if _cap() <= 0 or queue != Queue.CPU:
        return 0
    return max(settings.GRADER_HEAVY_IN_FLIGHT, 0)


def _heavy(user_id: int) -> bool:
    """Whether the learner ran more than GRADER_HEAVY_SECONDS of code in the last
    GRADER_HEAVY_WINDOW seconds, or most of their runs in it ran out of time (code that sleeps or
    spins to the limit). A run of quick code, or one slow run among quick ones, is not heavy: a
    burst of many learners' code keeps every slot instead of leaving one idle for nobody. One
    query."""
    since = timezone.now() - timedelta(seconds=settings.GRADER_HEAVY_WINDOW)
    found = Submission.objects.filter(user_id=user_id, finished_at__gte=since).aggregate(
        runs=Count("pk"),
        out_of_time=Count("pk", filter=Q(status=Submission.Status.TIMED_OUT)),
        ran=Sum("duration_ms"),
    )
    if (found["ran"] or 0) >= settings.GRADER_HEAVY_SECONDS * 1000:
        return True
    return 2 * found["out_of_time"] > found["runs"]


# pg_advisory_xact_lock keys serialising the lane's decisions, one per queue. Always taken after
# the learner's row lock and never followed by another learner's (one order: no deadlock).
LANE_LOCK_KEYS = {queue: 0x51_42_4C_41_4E_45_00 + i for i, queue in enumerate(Queue.values)}


def _lane_room(*, queue: str, lane: int, first: Submission, mine: list[int]) -> int:
    """How many of a heavy learner's submissions, `first` the oldest, the lane can send now:
    its free places less the heavy submissions of others waiting for it since before `first`."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LANE_LOCK_KEYS[queue]])
    lane_rows = Submission.objects.filter(queue=queue, heavy=True, status=Submission.Status.QUEUED)
    used = Submission.objects.unfinished().filter(queue=queue, held=False, heavy=True).count()
    ahead = (
        lane_rows.filter(held=True)
        .filter(Q(queued_at__lt=first.queued_at) | Q(queued_at=first.queued_at, pk__lt=first.pk))
        .exclude(pk__in=mine)
        .count()
    )
    return max(lane - used - ahead, 0)


def submission_hold(*, submission: Submission) -> bool:
    """Hold a stored, queued submission while its learner has `GRADER_USER_IN_FLIGHT` others in
    flight on the same queue, or while a heavy learner's finds the heavy lane full. False: the
    caller sends it now."""
    cap = _cap()
    if cap <= 0:
        return False
    lane = _lane(submission.queue)
    with transaction.atomic():
        user_lock(submission.user_id)
        others = _in_flight(user_id=submission.user_id, queue=submission.queue) - 1
        if others >= cap:
            submission.mark_held(reason=held_message(cap))
            return True
        if not lane or not _heavy(submission.user_id):
            return False
        if _lane_room(queue=submission.queue, lane=lane, first=submission, mine=[submission.pk]):
            submission.heavy = True
            submission.save(update_fields=["heavy"])
            return False
        submission.mark_held(reason=lane_message(lane), heavy=True)
    return True


def user_release_held(*, user_id: int, queue: str) -> int:
    """Enqueue the learner's oldest held submissions on `queue`, as many as they have room for.
    Returns how many were released."""
    cap = _cap()
    # Inside a caller's transaction (a verdict's), no savepoint: it commits or fails with it.
    with transaction.atomic(savepoint=False):
        user_lock(user_id)
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
        lane = _lane(queue)
        heavy = bool(lane) and _heavy(user_id)
        if heavy:
            mine = [s.pk for s in released]
            room = _lane_room(queue=queue, lane=lane, first=released[0], mine=mine)
            waiting = [s.pk for s in released[room:]]
            if waiting:  # they wait for the lane now, not for the learner's earlier submission
                Submission.objects.filter(pk__in=waiting).update(
                    heavy=True, message=lane_message(lane)
                )
            released = released[:room]
        now = timezone.now()
        online = worker_online(queue)
        for submission in released:
            submission.mark_queued(now=now, worker_online=online, heavy=heavy)
            transaction.on_commit(
                functools.partial(enqueue_or_leave_to_sweep, submission.pk, submission.queue)
            )
    return len(released)


def lane_release(*, queue: str) -> int:
    """A heavy submission finished: send the heavy lane's oldest waiting ones, whoever's. Called
    after the verdict's transaction commits (it takes other learners' locks)."""
    lane = _lane(queue)
    if not lane:
        return 0
    waiting = (
        Submission.objects.filter(
            queue=queue, held=True, heavy=True, status=Submission.Status.QUEUED
        )
        .order_by("queued_at", "id")
        .values_list("user_id", flat=True)[:lane]
    )
    return sum(user_release_held(user_id=user, queue=queue) for user in dict.fromkeys(waiting))


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
