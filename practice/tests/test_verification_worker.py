"""Verification runs on a worker: a new exercise version sent through the real broker is
verified by a real Celery worker (CPU queue) through the real sandbox, and goes live."""

from practice.services import dispatch
from quizbank.models import Exercise

from .test_reliability import pytestmark, redis_server, wait_for, worker  # noqa: F401

FIXED = "def double(x):\n    return x + x\n"


def test_a_worker_verifies_a_new_version_and_it_goes_live(exercise, worker):  # noqa: F811
    worker()
    Exercise.objects.filter(pk=exercise.pk).update(solution_code=FIXED)
    exercise.refresh_from_db()
    version = exercise.version_create()
    assert version is not None and version.state == "verifying"
    assert exercise.live_version.number == 1
    dispatch.exercise_version_dispatch(version.pk)  # no transaction here: sent at once

    def landed() -> bool:
        version.refresh_from_db()
        return version.state != "verifying"

    wait_for(landed, "the worker's verification", 180)
    assert (version.state, version.reasons) == ("verified", [])
    assert exercise.live_version == version
