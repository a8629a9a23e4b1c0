"""Feedback that teaches: a failing submission is matched, in the grader, against the exercise's
known wrong solutions; the API and the page name the misconception it shares. Runs the real
sandbox (the exercise fixture's wrong solution adds two instead of doubling)."""

import pytest

from practice.models import Submission

pytestmark = pytest.mark.django_db


def submit(api, code, capture, mode=None):
    body = {"question": "double-it", "code": code}
    if mode:
        body["mode"] = mode
    with capture(execute=True):
        response = api.post("/api/submissions/", body, format="json")
    assert response.status_code == 201, response.content
    return api.get(f"/api/submissions/{response.json()['id']}/").json()


def test_a_known_mistake_is_named_with_its_hint(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    body = submit(api, "def double(x):\n    return x + 2\n", django_capture_on_commit_callbacks)
    assert body["status"] == "failed"
    assert body["diagnosis"] == {
        "misconception": "Doubling means adding two.",
        "hint": "Try x = 3.",
        "confidence": "outputs",
    }


def test_the_same_failing_checks_with_other_values_is_a_pattern_match(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    body = submit(api, "def double(x):\n    return x * 3\n", django_capture_on_commit_callbacks)
    assert body["status"] == "failed"
    assert body["diagnosis"]["confidence"] == "pattern"


def test_a_passing_submission_and_an_unknown_mistake_have_no_diagnosis(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    right = submit(api, "def double(x):\n    return x * 2\n", django_capture_on_commit_callbacks)
    assert right["status"] == "passed" and right["diagnosis"] is None
    odd = submit(api, "def double(x):\n    return x.sum()\n", django_capture_on_commit_callbacks)
    assert odd["status"] == "failed" and odd["diagnosis"] is None


def test_the_page_shows_the_diagnosis_above_the_checks(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/questions/double-it/submissions/",
            {"code": "def double(x):\n    return x + 2\n", "mode": "submit"},
            headers={"HX-Request": "true"},
        )
    submission = Submission.objects.get()
    page = client.get(f"/submissions/{submission.pk}/", headers={"HX-Request": "true"})
    html = page.content.decode()
    assert "What went wrong" in html and "Doubling means adding two." in html
    assert html.index("What went wrong") < html.index('class="checks"')


def test_examples_mode_runs_only_visible_checks_and_is_never_scored(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    wrong = "def double(x):\n    return x + 2\n"
    body = submit(api, wrong, django_capture_on_commit_callbacks, mode="examples")
    assert body["mode"] == "examples" and body["status"] == "failed"
    assert [c["name"] for c in body["checks"]] == ["doubles an example"]
    assert all(c["visible"] for c in body["checks"])
    right = submit(
        api, "def double(x):\n    return x * 2\n", django_capture_on_commit_callbacks, "examples"
    )
    assert right["status"] == "passed"
    # Example runs are listed apart, and neither schedule a review nor solve the question.
    assert api.get("/api/submissions/").json()["results"] == []
    listed = api.get("/api/submissions/?mode=examples").json()["results"]
    assert {s["id"] for s in listed} == {body["id"], right["id"]}
    assert not user.review_cards.exists()
    assert not user.question_progress.filter(state="solved").exists()
    assert api.get("/api/submissions/?mode=nope").status_code == 400
