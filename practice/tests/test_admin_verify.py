"""The admin's Verify action grades an exercise's files in the real sandbox."""

import pytest

from quizbank.tests.factories import ExerciseFactory

pytestmark = pytest.mark.django_db


def test_verify_grades_reference_starter_and_wrong_solutions(admin_client):
    exercise = ExerciseFactory(
        wrong_solutions={
            "adds_two": "def double(x):\n    return x + 2\n",
            "sneaky": "def double(x):\n    return x * 2\n",
        }
    )
    response = admin_client.post(
        "/admin/quizbank/question/",
        {"action": "verify", "_selected_action": [exercise.question_id]},
    )
    assert response.status_code == 200
    (report,) = response.context["reports"]
    verdicts = {f.label: (f.result["status"], problem is None) for f, problem in report["files"]}
    assert verdicts["solution.py"] == ("passed", True)
    assert verdicts["starter.py"][1] is True
    assert verdicts["wrong/adds_two.py"] == ("failed", True)
    assert verdicts["wrong/sneaky.py"] == ("passed", False)  # a "wrong" solution that passes
    assert report["ok"] is False
    assert b"needs attention" in response.content and b"BROKEN" in response.content
