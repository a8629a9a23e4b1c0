"""Faults that are the site's, not the learner's: a grader that fails, and PostgreSQL or Redis
being away. Each is made real here (an interpreter that cannot start, a closed port), never
mocked, and each must end as the grader's fault or a 503 the client can retry, never a 500 or a
verdict scored against the learner."""

import socket
from pathlib import Path

import kombu.pools
import pytest
from django.db import connection
from django.test import override_settings
from django.urls import reverse

from practice import grader_client
from practice.models import Activity, QuestionProgress, ReviewCard, Submission
from practice.services.submissions import EXERCISE_BROKEN, GRADER_FAILED
from practice.views.actions import GRADING_UNAVAILABLE
from quizbank.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def use_broker(url: str) -> None:
    app.conf.broker_url = url
    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down(settings):
    previous, eager = app.conf.broker_url, app.conf.task_always_eager
    use_broker(f"redis://127.0.0.1:{closed_port()}/0")
    app.conf.task_always_eager = False
    settings.CELERY_TASK_ALWAYS_EAGER = False
    yield
    use_broker(previous)
    app.conf.task_always_eager = eager


@pytest.fixture
def database_down():
    """The next query fails to connect, as it does while PostgreSQL restarts."""
    if connection.vendor != "postgresql":
        # SQLite has no server to stop, and its test database lives in this process's memory.
        pytest.skip("needs PostgreSQL: the outage is a server that stops answering")
    saved = dict(connection.settings_dict)

    def stop() -> None:
        connection.close()
        connection.settings_dict["PORT"] = str(closed_port())
        connection.settings_dict["HOST"] = "127.0.0.1"

    yield stop
    connection.close()
    connection.settings_dict.update(saved)


def assert_503(response) -> None:
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert int(response["Retry-After"]) > 0
    assert response.json()["detail"]


def post_submission(api, slug: str = "double-it"):
    return api.post("/api/submissions/", {"question": slug, "code": "x = 1\n"}, format="json")


def test_with_the_broker_down_a_submission_is_a_json_503_and_nothing_is_stored(
    api, user, exercise, broker_down
):
    api.force_authenticate(user)
    assert_503(post_submission(api))
    assert not Submission.objects.exists()


def test_with_redis_down_altogether_the_api_answers_503(api, user, exercise, broker_down):
    cache_down = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
        }
    }
    api.force_authenticate(user)
    with override_settings(CACHES=cache_down):
        response = post_submission(api)  # the rate limit's cache is the first thing to fail
    assert_503(response)


def test_with_the_database_down_the_api_answers_503(api, user, exercise, database_down):
    api.force_authenticate(user)
    database_down()
    assert_503(post_submission(api))


def test_with_the_broker_down_the_exercise_form_says_so(client, user, exercise, broker_down):
    client.force_login(user)
    response = client.post(
        reverse("practice:submit", args=[exercise.question.slug]),
        {"code": "x = 1\n", "mode": "submit"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    assert GRADING_UNAVAILABLE in response.content.decode()
    assert 'id="verdict"' in response.content.decode()  # site.js swaps it into the form's area
    assert not Submission.objects.exists()


@pytest.fixture
def broken_grader(settings, tmp_path: Path, eager):
    """An interpreter that exits at once: the sandbox pool cannot start."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    grader_client.close_pools()
    settings.GRADER_PYTHON = str(python)
    yield
    grader_client.close_pools()


def test_a_grader_that_cannot_run_is_the_graders_fault_and_never_scored(
    api, user, exercise, broken_grader
):
    api.force_authenticate(user)
    response = post_submission(api)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "error"
    assert body["message"].startswith(GRADER_FAILED.split("{")[0])
    assert "not in your code" in body["message"]
    assert not Activity.objects.exists()
    assert not QuestionProgress.objects.exists()
    assert not ReviewCard.objects.exists()


def test_with_the_database_down_the_exercise_form_says_so(client, user, exercise, database_down):
    client.force_login(user)
    url = reverse("practice:submit", args=[exercise.question.slug])
    database_down()
    response = client.post(url, {"code": "x = 1\n", "mode": "submit"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    assert GRADING_UNAVAILABLE in response.content.decode()


def test_a_broken_reference_is_never_scored_against_the_learner(api, user, exercise, eager):
    exercise.versions.update(solution_code="def double(x):\n    return 1 / 0\n")
    api.force_authenticate(user)
    response = api.post(
        "/api/submissions/",
        {"question": "double-it", "code": "def double(x):\n    return x * 2\n"},
        format="json",
    )
    body = response.json()
    assert body["status"] == "error"
    assert body["message"] == EXERCISE_BROKEN  # the reason is for the staff (the admin)
    assert not Activity.objects.exists() and not ReviewCard.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/questions/",
        "/questions/?topic=tensors&search=double",
        "/questions/double-it/",
        "/api/questions/",
        "/api/questions/?search=double",
        "/api/questions/double-it/",
        "/accounts/login/",
    ],
)
def test_reading_pages_needs_no_redis(client, user, exercise, path):
    """Only grading needs the broker: with Redis away the pages are built from the database."""
    redis_down = {
        "default": {
            "BACKEND": "quizbank.cache.DegradingRedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
        },
        "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    client.force_login(user)
    with override_settings(CACHES=redis_down):
        response = client.get(path)
        assert response.status_code == 200 or response.status_code == 302  # signed in: sent on
