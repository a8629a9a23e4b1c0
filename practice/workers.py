"""Which grading queues have a worker online.

A worker announces itself, once per grading queue it consumes (`cpu`, `gpu`), with a Redis key
that expires unless refreshed, so a crashed or unplugged worker disappears within
WORKER_HEARTBEAT_TTL seconds without anyone cleaning up. It refreshes the key every
WORKER_HEARTBEAT_INTERVAL seconds, so after Redis restarts without its keys the worker is back
within that. The page and the sweep use this to tell a learner that nobody is there to grade their
submission yet, for both queues alike; they say nothing when the cache cannot tell, or when a
submission on the queue is being graded right now (its row runs under a live lease)."""

from __future__ import annotations

import contextlib
import socket
import threading

import redis
from celery.signals import worker_ready, worker_shutdown
from django.core.cache import cache
from django.utils import timezone

GRADING_QUEUES = ("cpu", "gpu")
WORKER_HEARTBEAT_KEY = "grader:worker:{queue}:{name}"
WORKER_HEARTBEAT_INDEX = "grader:workers:{queue}"
WORKER_HEARTBEAT_TTL = 30
WORKER_HEARTBEAT_INTERVAL = 2

_stop = threading.Event()
_announced: list[tuple[str, str]] = []  # (queue, name) this process announces


def worker_online(queue: str) -> bool:
    names = cache.get(WORKER_HEARTBEAT_INDEX.format(queue=queue)) or []
    return any(cache.get(WORKER_HEARTBEAT_KEY.format(queue=queue, name=n)) for n in names)


def worker_announce(*, queue: str, name: str) -> None:
    cache.set(WORKER_HEARTBEAT_KEY.format(queue=queue, name=name), True, WORKER_HEARTBEAT_TTL)
    index = WORKER_HEARTBEAT_INDEX.format(queue=queue)
    names = set(cache.get(index) or [])
    if name not in names:
        cache.set(index, sorted(names | {name}), None)


def worker_withdraw(*, queue: str, name: str) -> None:
    cache.delete(WORKER_HEARTBEAT_KEY.format(queue=queue, name=name))


def _grading_queues(consumer) -> list[str]:
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return [q.name for q in queues if q.name in GRADING_QUEUES]


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs):
    queues = _grading_queues(sender)
    if not queues:
        return
    name = getattr(sender, "hostname", None) or socket.gethostname()
    _announced.extend((queue, name) for queue in queues)

    def announce_all() -> None:
        # Each beat tries Redis itself, not the cache's "away for a few seconds" shortcut.
        getattr(cache, "retry_now", lambda: None)()
        for queue, announced in _announced:
            # Redis away for a moment: the next beat announces again.
            with contextlib.suppress(Exception):
                worker_announce(queue=queue, name=announced)

    def beat() -> None:
        while not _stop.wait(WORKER_HEARTBEAT_INTERVAL):
            announce_all()

    announce_all()
    threading.Thread(target=beat, name="worker-heartbeat", daemon=True).start()
    from . import grader_client

    grader_client.start_pools(queues)


@worker_shutdown.connect
def _stop_heartbeat(**kwargs):
    _stop.set()
    for queue, name in _announced:
        with contextlib.suppress(Exception):  # shutting down; the key expires on its own
            worker_withdraw(queue=queue, name=name)


def queue_has_worker(queue: str) -> bool:
    """`worker_online`, but True when the cache cannot tell (Redis away) or when a submission on
    the queue is being graded now (its worker's key may have gone with a Redis restart): a
    learner is then told nothing rather than something false."""
    try:
        if worker_online(queue) or not getattr(cache, "available", True):
            return True
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return True
    from .models import Submission

    return Submission.objects.filter(
        queue=queue, status=Submission.Status.RUNNING, deadline_at__gt=timezone.now()
    ).exists()
