from datetime import timedelta

import pytest
from django.utils import timezone

from practice.models import Submission
from practice.services.submissions import submission_sweep

pytestmark = pytest.mark.django_db


def stuck(user, exercise, *, status="running", tries=1, ago=600):
    return Submission.objects.create(
        user=user,
        question=exercise.question,
        code="x = 1\n",
        status=status,
        tries=tries,
        deadline_at=timezone.now() - timedelta(seconds=ago),
    )


def test_a_submission_stuck_past_its_deadline_is_requeued(
    user, exercise, django_capture_on_commit_callbacks
):
    submission = stuck(user, exercise)
    with django_capture_on_commit_callbacks() as callbacks:
        assert submission_sweep() == {"requeued": 1, "failed": 0}
    submission.refresh_from_db()
    assert submission.status == "queued" and submission.tries == 2
    assert submission.deadline_at > timezone.now()
    assert len(callbacks) == 1  # the grading task is sent again once the row is committed


def test_after_three_tries_it_fails_with_a_reason(user, exercise):
    submission = stuck(user, exercise, status="queued", tries=3)
    assert submission_sweep() == {"requeued": 0, "failed": 1}
    submission.refresh_from_db()
    assert submission.status == "error"
    assert "did not finish after 3 tries" in submission.message
    assert submission.finished_at is not None


def test_a_gpu_submission_that_no_worker_took_says_so(user, gpu_exercise):
    submission = stuck(user, gpu_exercise, status="queued", tries=3)
    submission.queue = "gpu"
    submission.save()
    submission_sweep()
    submission.refresh_from_db()
    assert "no GPU worker picked it up" in submission.message


def test_submissions_within_their_deadline_or_finished_are_left_alone(user, exercise):
    fine = stuck(user, exercise, ago=-60)
    done = stuck(user, exercise, status="passed")
    assert submission_sweep() == {"requeued": 0, "failed": 0}
    fine.refresh_from_db()
    done.refresh_from_db()
    assert (fine.status, fine.tries, done.status) == ("running", 1, "passed")
