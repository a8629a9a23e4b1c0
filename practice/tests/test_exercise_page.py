"""Submitting code from the question page: the verdict comes back as a partial that polls while
the submission is queued or running, and is graded through the real sandbox here (in-process)."""

import importlib
import re

import pytest

from practice import grader_client, workers
from practice.models import Activity, QuestionProgress, ReviewCard, Submission

from .test_api_submissions import RIGHT, WRONG

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def submit(client, code, capture, question="double-it", **extra):
    with capture(execute=True):
        return client.post(f"/questions/{question}/submissions/", {"code": code}, **extra)


def test_the_exercise_shows_the_starter_code_in_an_editor_and_the_queue(client, exercise):
    body = client.get("/questions/double-it/").content.decode()
    assert 'data-editor="python"' in body and "raise NotImplementedError" in body
    assert "vendor/codemirror.js" in body and "CPU queue" in body
    assert "Sign in to submit" in body
    assert "SECRET_INPUT" not in body and "return x * 2" not in body


def test_a_submission_polls_until_graded_then_shows_each_check(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    client.force_login(user)
    body = submit(client, WRONG, django_capture_on_commit_callbacks, **HTMX).content.decode()
    submission = Submission.objects.get()
    # The response was rendered before the commit that grades it: it polls.
    assert (
        f'hx-get="/submissions/{submission.pk}/"' in body and 'hx-trigger="load delay:1s"' in body
    )
    assert 'id="submissions" aria-labelledby="submissions-heading" hx-swap-oob="true"' in body
    body = client.get(f"/submissions/{submission.pk}/", **HTMX).content.decode()
    assert "hx-trigger" not in body
    assert "✗ Failed" in body and "doubles an example" in body and "doubles a hidden tensor" in body
    assert "SECRET_INPUT" not in body
    assert 'class="check-message"' in body
    body = submit(client, RIGHT, django_capture_on_commit_callbacks, **HTMX).content.decode()
    latest = Submission.objects.first()
    body = client.get(f"/submissions/{latest.pk}/", **HTMX).content.decode()
    assert "✓ Passed" in body and body.count('<li class="passed">') == 4


def test_a_verdict_updates_progress_and_reviews(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    client.force_login(user)
    submit(client, WRONG, django_capture_on_commit_callbacks, **HTMX)
    submit(client, WRONG, django_capture_on_commit_callbacks, **HTMX)
    card = ReviewCard.objects.get(user=user)
    # Failing twice in a row is one lapse: "again" once.
    assert card.last_rating == Activity.Rating.AGAIN and card.reviews == 1
    assert QuestionProgress.objects.get(user=user).state == "attempted"
    submit(client, RIGHT, django_capture_on_commit_callbacks, **HTMX)
    card.refresh_from_db()
    assert card.last_rating == Activity.Rating.GOOD and card.reviews == 2
    assert QuestionProgress.objects.get(user=user).state == "solved"
    verdicts = Activity.objects.filter(kind="submission").order_by("created_at")
    assert [a.correct for a in verdicts] == [False, False, True]


def test_without_javascript_a_submission_comes_back_to_the_exercise(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    client.force_login(user)
    response = submit(client, RIGHT, django_capture_on_commit_callbacks)
    assert response["Location"] == "/questions/double-it/#exercise"
    body = client.get("/questions/double-it/").content.decode()
    assert "✓ Passed" in body and "Your submissions" in body


def test_an_empty_submission_says_why_and_stores_nothing(client, user, exercise):
    client.force_login(user)
    body = client.post("/questions/double-it/submissions/", {"code": ""}, **HTMX).content.decode()
    assert "The code is empty." in body and not Submission.objects.exists()


def test_submitting_from_the_page_shares_the_apis_rate_limit(client, api, user, exercise, settings):
    settings.SUBMISSION_RATE = "2/min"
    api.force_authenticate(user)
    api.post("/api/submissions/", {"question": "double-it", "code": RIGHT}, format="json")
    client.force_login(user)
    client.post("/questions/double-it/submissions/", {"code": RIGHT}, **HTMX)
    body = client.post("/questions/double-it/submissions/", {"code": RIGHT}, **HTMX)
    assert "wait a minute" in body.content.decode()
    assert Submission.objects.count() == 2


def test_a_visitor_is_sent_to_sign_in_and_back_to_the_exercise(client, exercise):
    response = client.post("/questions/double-it/submissions/", {"code": RIGHT}, **HTMX)
    assert response["HX-Redirect"] == "/accounts/login/?next=%2Fquestions%2Fdouble-it%2F%23exercise"
    assert not Submission.objects.exists()


def test_another_users_submission_is_never_shown(client, user, django_user_model, exercise):
    other = django_user_model.objects.create_user("other", password="x-long-password-1")
    theirs = Submission.objects.create(user=other, question=exercise.question, code="# theirs")
    client.force_login(user)
    assert client.get(f"/submissions/{theirs.pk}/", **HTMX).status_code == 404
    assert client.get(f"/submissions/{theirs.pk}/").status_code == 404
    assert "# theirs" not in client.get("/questions/double-it/").content.decode()


def test_a_submission_page_without_javascript_shows_verdict_and_code(client, user, exercise):
    mine = Submission.objects.create(user=user, question=exercise.question, code="# mine")
    client.force_login(user)
    body = client.get(f"/submissions/{mine.pk}/").content.decode()
    assert "Queued" in body and "# mine" in body


def test_a_gpu_exercise_says_whether_a_gpu_worker_is_online(client, gpu_exercise, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    body = client.get("/questions/double-on-gpu/").content.decode()
    assert "GPU queue" in body and "No GPU worker is online right now" in body
    workers.worker_announce(queue="gpu", name="gpu-1")
    try:
        assert "A GPU worker is online" in client.get("/questions/double-on-gpu/").content.decode()
    finally:
        workers.worker_withdraw(queue="gpu", name="gpu-1")


def test_a_cpu_exercise_says_when_no_cpu_worker_is_online(client, exercise, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    body = client.get("/questions/double-it/").content.decode()
    assert "No CPU worker is online right now" in body
    workers.worker_announce(queue="cpu", name="cpu-1")
    try:
        assert "No CPU worker is online" not in client.get("/questions/double-it/").content.decode()
    finally:
        workers.worker_withdraw(queue="cpu", name="cpu-1")


def test_a_gpu_exercise_graded_in_process_says_so(client, gpu_exercise, eager):
    body = client.get("/questions/double-on-gpu/").content.decode()
    assert "grades in its own process" in body


def test_a_submission_page_has_ordered_headings_and_highlighted_code(client, user, exercise):
    submission = Submission.objects.create(
        user=user,
        question=exercise.question,
        code="def double(x):\n    return x * 2\n",
        status="failed",
        message="1 of 2 checks passed.",
    )
    client.force_login(user)
    body = client.get(f"/submissions/{submission.pk}/").content.decode()
    levels = [int(level) for level in re.findall(r"<h([1-6])[\s>]", body)]
    assert levels[0] == 1
    assert all(b - a <= 1 for a, b in zip(levels, levels[1:], strict=False)), levels
    assert '<pre tabindex="0" role="group" aria-label="Your code">' in body
    assert '<span class="nf">double</span>' in body and '<span class="k">return</span>' in body


def test_the_web_process_warms_its_sandbox_at_boot_and_the_page_says_so_meanwhile(
    client, user, exercise, eager
):
    grader_client.close_pools()
    import quizbank.wsgi

    importlib.reload(quizbank.wsgi)  # what runserver and gunicorn do as they start
    client.force_login(user)
    try:
        body = client.get("/questions/double-it/").content.decode()
        assert "Warming up the sandbox" in body
        assert 'data-pending="Warming up the sandbox, then grading…"' in body
        grader_client.sandbox_pool("cpu")  # waits for the pool the boot started
        assert not grader_client.pool_starting("cpu")
        assert "Warming up" not in client.get("/questions/double-it/").content.decode()
    finally:
        grader_client.close_pools()
