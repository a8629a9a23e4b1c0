"""Issue 13, finding 8: the time limit is fitted to the exercise (a multiple of the reference's
measured time, with a floor, at most the exercise's own limit), stated to the learner on the page
and in the API, enforced by the grader, and named in a timed-out verdict. Graded through the real
sandbox (in-process here; test_fairness.py does it through a Celery worker)."""

import pytest

from grader import limits

from .test_api_submissions import RIGHT, submit

pytestmark = pytest.mark.django_db

SLEEPER = "import time\ntime.sleep(60)\n\ndef double(x):\n    return x * 2\n"


def stated_limit(api) -> float:
    return api.get("/api/questions/double-it/").json()["exercise"]["time_limit"]


def test_the_limit_is_fitted_to_the_reference_once_measured_and_stated(
    api, client, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    assert stated_limit(api) == exercise.time_limit == 10  # not measured yet: the ceiling
    assert "Time limit: 10 s a run." in client.get("/questions/double-it/").content.decode()

    assert submit(api, RIGHT, capture=django_capture_on_commit_callbacks).data["status"] == "passed"
    exercise.refresh_from_db()
    assert exercise.reference_seconds is not None and exercise.reference_seconds > 0
    fitted = limits.fitted_time_limit(exercise.reference_seconds, 10)
    assert fitted < 10
    assert stated_limit(api) == fitted
    page = client.get("/questions/double-it/").content.decode()
    assert f"Time limit: {fitted:g} s a run, fitted to this exercise" in page

    boss = type(user).objects.create_superuser("boss", password="a-long-test-password")
    client.force_login(boss)
    admin = client.get(f"/admin/quizbank/question/{exercise.question.pk}/change/").content.decode()
    assert f"{fitted:g} s: {exercise.time_limit_rule}" in admin  # what curators see

    body = submit(api, SLEEPER, capture=django_capture_on_commit_callbacks).data
    assert body["status"] == "timed_out", body
    assert f"time limit of {fitted:g} s" in body["message"]
    assert body["duration_ms"] < 10_000  # stopped at the fitted limit, not the ceiling


def test_editing_the_reference_or_checks_makes_the_measurement_stale(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    submit(api, RIGHT, capture=django_capture_on_commit_callbacks)
    exercise.refresh_from_db()
    assert exercise.fitted_time_limit < 10
    exercise.solution_code += "\n# a slower reference, say\n"
    exercise.save()
    assert stated_limit(api) < 10  # learners keep the verified version, and its limit
    exercise.version_create(verified=True)  # the edit, verified (as a bank import is)
    assert stated_limit(api) == 10  # until the grader measures the new reference
    submit(api, RIGHT, capture=django_capture_on_commit_callbacks)
    assert stated_limit(api) < 10


def test_a_run_of_the_examples_only_does_not_fit_the_limit(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/submissions/",
            {"question": "double-it", "code": RIGHT, "mode": "examples"},
            format="json",
        )
    assert api.get(f"/api/submissions/{response.json()['id']}/").json()["status"] == "passed"
    exercise.refresh_from_db()
    assert exercise.reference_seconds is None  # only a run of every check measures it


def test_the_verdict_that_measured_the_reference_restates_the_limit_the_next_run_gets(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    from practice.grader_client import exercise_job
    from practice.models import Submission

    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/questions/double-it/submissions/",
            {"code": RIGHT, "mode": "submit"},
            headers={"HX-Request": "true"},
        )
    submission = Submission.objects.get()
    html = client.get(f"/submissions/{submission.pk}/", headers={"HX-Request": "true"})
    exercise.refresh_from_db()
    applies = exercise_job(exercise, RIGHT)["time_limit"]
    assert applies < 10  # measured now: the page loaded before said 10 s
    assert (
        f'<p class="small muted" id="time-limit" hx-swap-oob="true">Time limit: {applies:g} s a '
        "run, fitted to this exercise"
    ) in html.content.decode()
