"""A broken exercise never scores a learner: when the grader finds the exercise itself at fault
(through the real sandbox), the submission is an error that says the attempt is not counted,
nothing is recorded in the learner's progress or reviews, a log line names the exercise, and the
admin lists the exercise under its grader errors."""

import pytest

from practice.models import Activity, QuestionProgress, ReviewCard, Submission
from practice.services.submissions import EXERCISE_BROKEN

from .conftest import DOUBLE_CHECKS
from .test_api_submissions import RIGHT, submit

pytestmark = pytest.mark.django_db

BROKEN = {
    "a reference that raises": {
        "solution_code": "def double(x):\n    raise RuntimeError('oops')\n",
    },
    "a check naming an undefined name": {
        "checks": [*DOUBLE_CHECKS, {"name": "typo", "code": "out = dubble(x)", "compare": "out"}],
    },
    "a forbid rule the reference breaks": {
        "solution_code": "def double(x):\n    return torch.mul(x, 2)\n",
        "forbid": ["torch.mul"],
    },
}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_a_broken_exercise_gives_an_error_that_is_not_counted(
    fault, api, user, exercise, eager, django_capture_on_commit_callbacks, caplog
):
    exercise.versions.update(**BROKEN[fault])
    api.force_authenticate(user)
    body = submit(api, RIGHT, capture=django_capture_on_commit_callbacks).data
    assert body["status"] == "error", body
    assert body["message"] == EXERCISE_BROKEN
    assert body["checks"] == []
    assert not Activity.objects.filter(user=user).exists()
    assert not QuestionProgress.objects.filter(user=user).exists()
    assert not ReviewCard.objects.filter(user=user).exists()
    assert "exercise double-it is broken" in caplog.text
    exercise.refresh_from_db()
    assert exercise.fault_at is not None
    assert "reference solution" in exercise.fault
    assert Submission.objects.get().status == "error"


def test_staff_see_the_exercises_with_recent_grader_errors(
    api, user, exercise, eager, django_capture_on_commit_callbacks, admin_client
):
    from quizbank.tests.factories import ExerciseFactory

    healthy = ExerciseFactory(question__slug="healthy-one", question__kind="code")
    exercise.versions.update(**BROKEN["a reference that raises"])
    api.force_authenticate(user)
    submit(api, RIGHT, capture=django_capture_on_commit_callbacks)
    page = admin_client.get("/admin/quizbank/question/?grader_errors=recent")
    assert page.status_code == 200
    listed = {q.slug for q in page.context["cl"].result_list}
    assert listed == {"double-it"}
    assert healthy.question.slug not in listed
    assert b"reference solution failed" in page.content  # the column says why
