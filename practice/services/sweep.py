"""The sweep: bring back every submission whose message or worker was lost (beat runs it every few
seconds on its own `sweep` queue)."""

from __future__ import annotations

import base64
import functools
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import redis
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from quizbank.models import Queue

from .. import workers
from ..models import MAX_TRIES, Submission
from ..models.submissions import no_worker_message
from . import dispatch

log = logging.getLogger(__name__)


def submission_sweep(*, now: Any = None) -> dict[str, int]:
    """Bring back every submission whose message or worker was lost; after MAX_TRIES, fail it.

    A submission is a row before it is a message, so a lost message or a killed worker only delays
    its verdict. Beat runs this every few seconds on a queue of its own (`sweep`), so neither a
    backlog nor a missing grading worker delays it. It finds:
    - running rows whose lease ran out (their worker died: it renews every few seconds);
    - queued rows whose message a worker took but never started (it died in between: a live one
      marks the row running at once), without waiting for their deadline;
    - queued rows past their deadline whose message the broker does not hold (it was never sent,
      or was lost); rows that are only waiting in a backlog are left alone;
    - every queued row when the broker lost its state (restarted without persistence), at once.
    It also tells the learner when no worker serves a queue, and stops saying so when one does."""
    now = now or timezone.now()
    broker = _broker_state(timezone.now())
    in_broker = broker.waiting | (set(broker.delivered) - broker.stalled)
    online = {queue: workers.queue_has_worker(queue) for queue in Queue.values}
    requeued = failed = restored = 0
    with transaction.atomic():
        # A held row waits for its learner's earlier submission, not for a lost message: the
        # dispatcher releases it (held_release_all below), never this loop.
        candidates = (
            Submission.objects.unfinished().filter(held=False).select_for_update(skip_locked=True)
        )
        if not broker.lost:
            candidates = candidates.filter(
                Q(deadline_at__lt=now) | Q(pk__in=broker.stalled, status=Submission.Status.QUEUED)
            )
        for submission in candidates:
            stalled = (
                submission.status == Submission.Status.QUEUED and submission.pk in broker.stalled
            )
            overdue = stalled or submission.deadline_at is None or submission.deadline_at < now
            if submission.status == Submission.Status.QUEUED and submission.pk in in_broker:
                # Its message is in the broker: waiting its turn, not lost. If no worker serves
                # its queue, the wait still counts, so it ends with that reason after MAX_TRIES.
                if overdue and not online[submission.queue]:
                    _wait_counted(submission, now=now, online=False)
                    failed += submission.status == Submission.Status.ERROR
                continue
            if submission.status == Submission.Status.RUNNING and not overdue:
                continue  # a live worker holds its lease
            # Whatever a dead worker left undelivered goes: it would come back in an hour.
            stale = broker.delivered.get(submission.pk, [])
            if not overdue:  # a queued row whose message went with the broker's state
                if submission.queued_at > now - PUBLISH_GRACE:
                    continue  # its message may still be on its way
                restored += 1
            elif submission.tries >= MAX_TRIES:
                _fail_stuck(submission, now=now, online=online[submission.queue])
                if stale:
                    transaction.on_commit(functools.partial(_drop_deliveries, stale))
                failed += 1
                continue
            else:
                requeued += 1
            submission.mark_queued(
                now=now, worker_online=_told_online(online, submission.queue), count_try=overdue
            )
            pk, queue = submission.pk, submission.queue
            transaction.on_commit(functools.partial(_resend, pk, queue, stale))
    _update_waiting_messages(online)
    if requeued or failed or restored:
        log.warning("sweep: %d re-enqueued, %d restored, %d failed", requeued, restored, failed)
    dispatch.held_release_all()  # held rows whose learner has room (a lost hand-off)
    return {"requeued": requeued, "failed": failed, "restored": restored}


def _told_online(online: dict[str, bool], queue: str) -> bool:
    return settings.CELERY_TASK_ALWAYS_EAGER or online[queue]


def _wait_counted(submission: Submission, *, now: Any, online: bool) -> None:
    """A try for a submission no worker could take; past MAX_TRIES it fails with that reason."""
    if submission.tries >= MAX_TRIES:
        _fail_stuck(submission, now=now, online=online)
    else:
        submission.mark_queued(now=now, worker_online=online, count_try=True)


def _fail_stuck(submission: Submission, *, now: Any, online: bool) -> None:
    picked = "" if online else f" (no {submission.queue.upper()} worker picked it up)"
    submission.mark_failed(
        reason=f"Grading did not finish after {MAX_TRIES} tries{picked}. "
        "Please submit again; if it keeps happening, tell us.",
        now=now,
    )


def _update_waiting_messages(online: dict[str, bool]) -> None:
    """Queued rows say whether a worker serves their queue, as they did when they were created.
    `online`: the sweep's one reading of worker presence per queue."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return
    for queue in Queue.values:
        message = no_worker_message(queue)
        waiting = Submission.objects.filter(status=Submission.Status.QUEUED, queue=queue)
        if online[queue]:
            waiting.filter(message=message).update(message="")
        else:
            waiting.filter(message="").update(message=message)


BROKER_EPOCH_KEY = "quizbank:broker-epoch"
# kombu's Redis transport: delivered, unacknowledged messages, and when each was delivered.
UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"
# After the broker lost its state, sweeps in this window restore queued rows whose message it does
# not hold; a row younger than PUBLISH_GRACE may still be on its way to the broker.
RESTORE_WINDOW = timedelta(seconds=15)
PUBLISH_GRACE = timedelta(seconds=2)


@dataclass
class BrokerState:
    """What the broker holds for grading. `waiting`: submissions whose message waits in a queue;
    `delivered`: submission -> (delivery tag, since when a worker should have started it) of
    messages a worker took and has not acknowledged; `stalled`: those of `delivered` that no
    worker started within START_GRACE (and none waits in a queue); `lost`: the broker lost its
    state lately."""

    waiting: set[int] = field(default_factory=set)
    delivered: dict[int, list[tuple[bytes, float]]] = field(default_factory=dict)
    stalled: set[int] = field(default_factory=set)
    lost: bool = False


def _start_grace() -> float:
    """How long a worker that took a message has to mark its row running: it does so first thing,
    so one that has not within a lease is gone (killed between taking the message and starting)."""
    return settings.GRADER_LEASE_SECONDS


def _broker_state(now: Any) -> BrokerState:
    """What the broker holds (BrokerState), Redis as broker only (the one this project deploys):
    queued messages are JSON in a list per queue; messages delivered but not acknowledged sit in
    the `unacked` hash, with when they were delivered in `unacked_index`, until the worker
    acknowledges them after grading (acks_late), or for kombu's visibility timeout (an hour) when
    the worker died. A marker key set by a sweep disappears when Redis restarts without
    persistence, taking every queued message with it. Without a Redis broker (in-process grading)
    there is nothing to inspect."""
    from quizbank.celery import app

    url = str(app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://")):
        return BrokerState()
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        # Snapshot first: a message published after it is for a row newer than the grace.
        raw = [m for q in Queue.values for m in client.lrange(q, 0, -1)]
        unacked: dict[bytes, bytes] = client.hgetall(UNACKED)  # type: ignore[assignment]
        taken: dict[bytes, float] = dict(
            client.zrange(UNACKED_INDEX, 0, -1, withscores=True)  # type: ignore[arg-type]
        )
        client.set(BROKER_EPOCH_KEY, now.isoformat(), nx=True)
        stamp = client.get(BROKER_EPOCH_KEY)
        epoch = datetime.fromisoformat(stamp.decode()) if isinstance(stamp, bytes) else now
    finally:
        client.close()
    state = BrokerState(lost=now - epoch < RESTORE_WINDOW)
    state.waiting = {pk for pk in map(_message_submission, raw) if pk is not None}
    for tag, entry in unacked.items():
        message = _unacked_message(entry)
        pk = _message_submission(json.dumps(message).encode()) if message else None
        if message is not None and pk is not None:
            since = max(taken.get(tag, time.time()), _eta(message))
            state.delivered.setdefault(pk, []).append((tag, since))
    started_by = time.time() - _start_grace()
    state.stalled = {
        pk
        for pk, deliveries in state.delivered.items()
        if pk not in state.waiting and all(since < started_by for _, since in deliveries)
    }
    return state


def _unacked_message(entry: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(entry)[0]
    except (ValueError, IndexError, TypeError, KeyError):
        return None
    return message if isinstance(message, dict) else None


def _eta(message: dict[str, Any]) -> float:
    """A retried task's message waits with the worker until its ETA: it starts then, not before."""
    eta = (message.get("headers") or {}).get("eta")
    try:
        return datetime.fromisoformat(eta).timestamp() if isinstance(eta, str) else 0.0
    except ValueError:
        return 0.0


def _resend(pk: int, queue: str, stale: list[tuple[bytes, float]]) -> None:
    _drop_deliveries(stale)
    dispatch.enqueue_or_leave_to_sweep(pk, queue)


def _drop_deliveries(deliveries: list[tuple[bytes, float]]) -> None:
    """Forget deliveries a dead worker left unacknowledged, once their submission was sent again
    (or ended): otherwise kombu hands them out again after its visibility timeout. A live worker
    that still holds one acknowledges nothing, harmlessly."""
    if not deliveries:
        return
    from quizbank.celery import app

    client = redis.Redis.from_url(
        str(app.conf.broker_url), socket_timeout=5, socket_connect_timeout=5
    )
    tags = [tag for tag, _ in deliveries]
    try:
        pipe = client.pipeline()
        pipe.zrem(UNACKED_INDEX, *tags)
        pipe.hdel(UNACKED, *tags)
        pipe.execute()
    except redis.exceptions.RedisError:
        log.warning("sweep: could not drop stale deliveries %s", tags)
    finally:
        client.close()


def _message_submission(raw: bytes | str) -> int | None:
    """The submission id a grading message carries, or None for anything else."""
    try:
        message = json.loads(raw)
        if message.get("headers", {}).get("task") != "submissions.grade":
            return None
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return int(args[0])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
