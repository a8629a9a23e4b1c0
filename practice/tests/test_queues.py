"""Routing to the cpu and gpu queues, through the real broker (Redis)."""

import os

import pytest
import redis

from practice import workers
from practice.services.submissions import NO_GPU_WORKER

from .conftest import requires_redis

pytestmark = [pytest.mark.django_db, requires_redis]


@pytest.fixture
def broker(settings):
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    for queue in ("cpu", "gpu"):
        client.delete(queue)
    yield client
    for queue in ("cpu", "gpu"):
        client.delete(queue)


def post(api, question, capture):
    with capture(execute=True):
        response = api.post(
            "/api/submissions/", {"question": question, "code": "x = 1\n"}, format="json"
        )
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_cpu_exercise_goes_to_the_cpu_queue(
    api, user, exercise, broker, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    body = post(api, "double-it", django_capture_on_commit_callbacks)
    assert body["status"] == "queued" and body["queue"] == "cpu"
    assert (broker.llen("cpu"), broker.llen("gpu")) == (1, 0)


def test_without_a_gpu_worker_a_gpu_submission_waits_and_says_why(
    api, user, gpu_exercise, broker, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    body = post(api, "double-on-gpu", django_capture_on_commit_callbacks)
    assert body["status"] == "queued" and body["queue"] == "gpu"
    assert body["message"] == NO_GPU_WORKER
    assert api.get(f"/api/submissions/{body['id']}/").json()["message"] == NO_GPU_WORKER
    assert (broker.llen("cpu"), broker.llen("gpu")) == (0, 1)


def test_with_a_gpu_worker_online_there_is_nothing_to_explain(
    api, user, gpu_exercise, broker, django_capture_on_commit_callbacks
):
    workers.worker_announce(queue="gpu", name="gpu@test")
    api.force_authenticate(user)
    body = post(api, "double-on-gpu", django_capture_on_commit_callbacks)
    assert body["message"] == "" and broker.llen("gpu") == 1
    workers.worker_withdraw(queue="gpu", name="gpu@test")
    assert not workers.worker_online("gpu")


def test_the_sweep_goes_to_a_queue_of_its_own(broker, settings):
    from practice.tasks import sweep_submissions

    broker.delete("sweep")
    sweep_submissions.delay()
    assert (broker.llen("sweep"), broker.llen("cpu"), broker.llen("gpu")) == (1, 0, 0)
    broker.delete("sweep")
    schedule = settings.CELERY_BEAT_SCHEDULE["sweep-stuck-submissions"]
    assert schedule["options"]["queue"] == "sweep" and schedule["schedule"] <= 5
