"""A submission's status changes, one model method each, checked on the stored row (no broker, no
worker: the transitions are the model's, not the queue's)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from practice.models import Submission
from practice.models.submissions import no_worker_message

from .factories import SubmissionFactory

pytestmark = pytest.mark.django_db


def stored(submission: Submission) -> Submission:
    return Submission.objects.get(pk=submission.pk)


def test_queued_is_due_back_by_its_queues_deadline(settings):
    settings.GRADER_QUEUE_DEADLINE = 120
    submission = SubmissionFactory(status="running", held=True, message="old", deadline_at=None)
    now = timezone.now()
    submission.mark_queued(now=now, worker_online=True)
    row = stored(submission)
    assert (row.status, row.held, row.message, row.tries) == ("queued", False, "", 0)
    assert row.deadline_at == now + timedelta(seconds=120)


def test_a_gpu_submission_queued_with_no_worker_waits_longer_and_says_why(settings):
    settings.GRADER_GPU_QUEUE_DEADLINE = 600
    submission = SubmissionFactory.build(queue="gpu")
    submission.user.save()
    submission.question.save()
    submission.user_id, submission.question_id = submission.user.pk, submission.question.pk
    now = timezone.now()
    submission.mark_queued(now=now, worker_online=False)  # a new row is inserted whole
    row = stored(submission)
    assert row.message == no_worker_message("gpu")
    assert "No GPU worker is online" in row.message
    assert row.deadline_at == now + timedelta(seconds=600)


def test_a_resend_counts_as_a_try():
    submission = SubmissionFactory(tries=1)
    submission.mark_queued(now=timezone.now(), worker_online=True, count_try=True)
    assert stored(submission).tries == 2


def test_held_has_no_deadline_and_keeps_what_it_said_after_its_reason():
    submission = SubmissionFactory(message=no_worker_message("cpu"))
    submission.mark_held(reason="Waiting for your earlier submission.")
    row = stored(submission)
    assert row.held and row.deadline_at is None and row.status == "queued"
    assert row.message == f"Waiting for your earlier submission. {no_worker_message('cpu')}"


def test_running_takes_a_lease_for_its_worker_and_counts_a_try(settings):
    settings.GRADER_LEASE_SECONDS = 6
    submission = SubmissionFactory(tries=0)
    now = timezone.now()
    submission.mark_running(worker="cpu@host" + "x" * 300, now=now)
    row = stored(submission)
    assert (row.status, row.tries, row.started_at) == ("running", 1, now)
    assert row.worker == ("cpu@host" + "x" * 300)[:200]
    assert row.deadline_at == now + timedelta(seconds=6)


def test_finished_stores_the_whole_verdict_and_nothing_is_due():
    submission = SubmissionFactory(status="running")
    now = timezone.now()
    checks = [{"name": "doubles", "status": "failed", "message": "off by one", "visible": True}]
    diagnosis = {"misconception": "m", "hint": "h", "confidence": "outputs"}
    submission.mark_finished(
        status="failed",
        message="1 of 1 checks failed",
        checks=checks,
        diagnosis=diagnosis,
        output="printed\n",
        duration_ms=42,
        now=now,
    )
    row = stored(submission)
    assert row.finished and row.status == "failed" and row.message == "1 of 1 checks failed"
    assert (row.checks, row.diagnosis, row.output, row.duration_ms) == (
        checks,
        diagnosis,
        "printed\n",
        42,
    )
    assert (row.finished_at, row.deadline_at) == (now, None)


def test_failed_is_an_error_that_says_why():
    submission = SubmissionFactory(status="running")
    now = timezone.now()
    submission.mark_failed(reason="The server stopped while grading it.", now=now)
    row = stored(submission)
    assert row.finished and row.status == "error"
    assert row.message == "The server stopped while grading it."
    assert (row.finished_at, row.deadline_at) == (now, None)
