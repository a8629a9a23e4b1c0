"""Which grading queues have a worker online.

A GPU worker announces itself with a Redis key that expires unless refreshed, so a crashed or
unplugged worker disappears within GPU_HEARTBEAT_TTL seconds without anyone cleaning up."""

from __future__ import annotations

import socket
import threading

from celery.signals import worker_ready, worker_shutdown
from django.core.cache import cache

GPU_HEARTBEAT_KEY = "grader:gpu-worker:{}"
GPU_HEARTBEAT_INDEX = "grader:gpu-workers"
GPU_HEARTBEAT_TTL = 30

_stop = threading.Event()
_worker_name: str | None = None  # set once this process announces itself as a GPU worker


def gpu_worker_online() -> bool:
    names = cache.get(GPU_HEARTBEAT_INDEX) or []
    return any(cache.get(GPU_HEARTBEAT_KEY.format(name)) for name in names)


def announce_gpu_worker(name: str) -> None:
    cache.set(GPU_HEARTBEAT_KEY.format(name), True, GPU_HEARTBEAT_TTL)
    names = set(cache.get(GPU_HEARTBEAT_INDEX) or [])
    if name not in names:
        cache.set(GPU_HEARTBEAT_INDEX, sorted(names | {name}), None)


def withdraw_gpu_worker(name: str) -> None:
    cache.delete(GPU_HEARTBEAT_KEY.format(name))


def _consumes_gpu_queue(consumer) -> bool:
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return any(q.name == "gpu" for q in queues)


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs):
    if not _consumes_gpu_queue(sender):
        return
    name = getattr(sender, "hostname", None) or socket.gethostname()

    def beat() -> None:
        while not _stop.wait(GPU_HEARTBEAT_TTL / 3):
            announce_gpu_worker(name)

    global _worker_name
    _worker_name = name
    announce_gpu_worker(name)
    threading.Thread(target=beat, name="gpu-heartbeat", daemon=True).start()


@worker_shutdown.connect
def _stop_heartbeat(**kwargs):
    _stop.set()
    if _worker_name:
        withdraw_gpu_worker(_worker_name)
