"""The admin's Verify sends an exercise to the grader (here in-process: no broker) and the
question's page shows what the real sandbox found."""

import pytest

from quizbank.tests.factories import ExerciseFactory

pytestmark = pytest.mark.django_db


def test_verify_grades_reference_starter_and_wrong_solutions(
    admin_client, eager, django_capture_on_commit_callbacks
):
    exercise = ExerciseFactory(
        wrong_solutions={
            "adds_two": "def double(x):\n    return x + 2\n",
            "sneaky": "def double(x):\n    return x * 2\n",
        }
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/quizbank/question/",
            {"action": "verify", "_selected_action": [exercise.question_id]},
        )
    assert response.status_code == 302
    version = exercise.versions.get()
    assert version.state == "failed"
    # a "wrong" solution that passes; adds_two fails but declares no misconception to diagnose
    assert "wrong/sneaky.py: must fail at least one check, but passed" in version.reasons
    assert not any(r.startswith(("solution.py", "starter.py")) for r in version.reasons)
    page = admin_client.get(f"/admin/quizbank/question/{exercise.question_id}/change/")
    assert b"Version 1: failed verification" in page.content
    assert b"wrong/sneaky.py: must fail at least one check, but passed" in page.content
