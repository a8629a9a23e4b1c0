"""Versioned exercises, through the admin and the real sandbox: an edit is a new version that
goes live for learners only once the grader verified it; each submission records the version it
was graded against; staff preview (and are graded against) the newest version meanwhile."""

import os
from pathlib import Path

import pytest
import redis

from practice.models import Submission
from practice.services import verification
from quizbank.models import ExerciseVersion
from quizbank.tests.test_admin import change_form_data

from .conftest import requires_redis
from .test_api_submissions import RIGHT, submit

pytestmark = pytest.mark.django_db

# Saved by mistake: the reference now makes the known mistake of its wrong solution "adds".
WRONG_REFERENCE = "def double(x):\n    return x + 2\n"
FIXED_REFERENCE = "def double(x):\n    return x + x\n"


@pytest.fixture
def curator(client, django_user_model):
    user = django_user_model.objects.create_superuser("chief", password="a-long-test-password")
    client.force_login(user)
    return client


def save_exercise(curator, exercise, capture, **fields) -> None:
    """The curator edits the exercise on the question's change page and saves."""
    data = change_form_data(curator, exercise.question)
    for name, value in fields.items():
        data[f"exercise-0-{name}"] = value
    with capture(execute=True):
        response = curator.post(f"/admin/quizbank/question/{exercise.question_id}/change/", data)
    assert response.status_code == 302, response.context and response.context["errors"]


def graded_version(submission_id: int) -> int:
    version = Submission.objects.get(pk=submission_id).exercise_version
    assert version is not None
    return version.number


def test_a_wrong_reference_stays_off_until_fixed_and_verified(
    curator, api, user, exercise, eager, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    save_exercise(curator, exercise, capture, solution_code=WRONG_REFERENCE)
    second = exercise.versions.get(number=2)
    assert second.state == "failed"
    assert second.reasons == ["wrong/adds.py: must fail at least one check, but passed"]
    assert exercise.live_version.number == 1

    api.force_authenticate(user)
    body = submit(api, RIGHT, capture=capture).data
    assert body["status"] == "passed", body  # graded against version 1, not the broken edit
    assert graded_version(body["id"]) == 1

    page = curator.get(f"/admin/quizbank/question/{exercise.question_id}/change/")
    text = page.content.decode()
    assert "Version 2: failed verification" in text and "wrong/adds.py: must fail" in text
    assert "Learners get version 1 until this one is verified" in text
    wrong_field = (
        page.context["inline_admin_formsets"][2].formset.forms[0].fields["wrong_solutions"]
    )
    assert "wrong/adds.py: must fail at least one check" in str(wrong_field.help_text)

    save_exercise(curator, exercise, capture, solution_code=FIXED_REFERENCE)
    third = exercise.versions.get(number=3)
    assert (third.state, third.reasons) == ("verified", [])
    assert exercise.live_version == third
    body = submit(api, RIGHT, capture=capture).data
    assert body["status"] == "passed" and graded_version(body["id"]) == 3
    listed = curator.get("/admin/practice/submission/").content.decode()
    assert f"Version 3 of exercise {exercise.pk}" in listed  # staff see what each was graded on
    assert f"Version 1 of exercise {exercise.pk}" in listed


def test_a_version_without_a_visible_check_fails_verification(exercise):
    version = exercise.versions.get()
    checks = [{**check, "visible": False} for check in version.checks]
    new = ExerciseVersion.objects.create(
        exercise=exercise, number=2, **{**version.graded_content(), "checks": checks}
    )
    verification.exercise_version_verify(version_id=new.pk)
    new.refresh_from_db()
    assert new.state == "failed"
    assert new.reasons == [verification.NO_VISIBLE_CHECK]


def test_a_forbid_list_that_refuses_the_reference_fails_verification(exercise):
    version = exercise.versions.get()
    content = {
        **version.graded_content(),
        "solution_code": "def double(x):\n    return torch.mul(x, 2)\n",
        "forbid": ["torch.mul"],
    }
    new = ExerciseVersion.objects.create(exercise=exercise, number=2, **content)
    verification.exercise_version_verify(version_id=new.pk)
    new.refresh_from_db()
    assert new.state == "failed"
    assert "refused by its own rules" in new.reasons[0]


def test_staff_see_and_are_graded_against_the_unverified_version(
    curator, client, api, user, staff, exercise, eager, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    data = change_form_data(curator, exercise.question)
    data["exercise-0-starter_code"] = "def double(x):\n    pass  # the new starter\n"
    # Saved without running what the commit sends: the version stays verifying.
    response = curator.post(f"/admin/quizbank/question/{exercise.question_id}/change/", data)
    assert response.status_code == 302
    assert exercise.latest_version.state == "verifying" and exercise.live_version.number == 1

    preview = curator.get(f"/questions/{exercise.question.slug}/?preview=1")
    assert "the new starter" in preview.content.decode()
    assert "this exercise is version 2, verifying in the grader" in preview.content.decode()
    client.force_login(user)
    assert (
        "the new starter"
        not in client.get(f"/questions/{exercise.question.slug}/").content.decode()
    )

    api.force_authenticate(staff)
    body = submit(api, RIGHT, capture=capture).data
    assert graded_version(body["id"]) == 2
    api.force_authenticate(user)
    body = submit(api, RIGHT, capture=capture).data
    assert graded_version(body["id"]) == 1


def test_an_exercise_with_no_verified_version_does_not_score(
    api, user, eager, django_capture_on_commit_callbacks
):
    from quizbank.tests.factories import ExerciseFactory, QuestionFactory

    ExerciseFactory(question=QuestionFactory(slug="double-it", kind="code"), first_version=False)
    api.force_authenticate(user)
    body = submit(api, RIGHT, capture=django_capture_on_commit_callbacks).data
    assert body["status"] == "error" and "not counted" in body["message"]
    assert not user.review_cards.exists()


def test_the_verify_action_enqueues_and_the_state_lands(
    curator, exercise, eager, django_capture_on_commit_callbacks
):
    version = exercise.versions.get()
    ExerciseVersion.objects.filter(pk=version.pk).update(state="failed", reasons=["old"])
    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post(
            "/admin/quizbank/question/",
            {"action": "verify", "_selected_action": [exercise.question_id]},
            follow=True,
        )
    assert "Sent to the grader for verification: double-it (version 1)" in response.content.decode()
    version.refresh_from_db()
    assert (version.state, version.reasons) == ("verified", [])
    state = curator.get(f"/admin/quizbank/question/{exercise.question_id}/version-state/").json()
    assert state["state"] == "verified" and "Learners get this version" in state["text"]


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(pid) for pid in text)
    return found


@requires_redis
def test_in_broker_mode_no_sandbox_process_is_started_by_a_web_request(
    curator, exercise, django_capture_on_commit_callbacks, settings
):
    assert not settings.CELERY_TASK_ALWAYS_EAGER
    broker = redis.Redis.from_url(os.environ["REDIS_URL"])
    broker.delete("cpu")
    before = _children()
    save_exercise(
        curator, exercise, django_capture_on_commit_callbacks, solution_code=FIXED_REFERENCE
    )
    with django_capture_on_commit_callbacks(execute=True):
        curator.post(
            "/admin/quizbank/question/",
            {"action": "verify", "_selected_action": [exercise.question_id]},
        )
    assert _children() - before == set()  # no zygote, no sandbox: the web process grades nothing
    assert exercise.latest_version.state == "verifying"
    assert broker.llen("cpu") == 2  # the save's and the action's verification, for a worker
    assert all(b"exercises.verify" in message for message in broker.lrange("cpu", 0, -1))
    broker.delete("cpu")
