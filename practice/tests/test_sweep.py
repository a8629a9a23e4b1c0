import json
import os
import time
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.utils import timezone

from accounts.tests.factories import UserFactory
from practice import workers
from practice.models import Submission
from practice.services.submissions import NO_WORKER, submission_create
from practice.services.sweep import submission_sweep

from .conftest import requires_redis

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
        assert submission_sweep() == {"requeued": 1, "failed": 0, "restored": 0}
    submission.refresh_from_db()
    assert submission.status == "queued" and submission.tries == 2
    assert submission.deadline_at > timezone.now()
    assert len(callbacks) == 1  # the grading task is sent again once the row is committed


def test_after_three_tries_it_fails_with_a_reason(user, exercise):
    submission = stuck(user, exercise, status="queued", tries=3)
    assert submission_sweep() == {"requeued": 0, "failed": 1, "restored": 0}
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
    assert submission_sweep() == {"requeued": 0, "failed": 0, "restored": 0}
    fine.refresh_from_db()
    done.refresh_from_db()
    assert (fine.status, fine.tries, done.status) == ("running", 1, "passed")


@pytest.fixture
def broker():
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    client.flushdb()
    submission_sweep()  # the first sweep marks the broker's epoch
    yield client
    client.flushdb()


def queued(user, exercise, capture) -> Submission:
    """A submission through the service, its message really sent to the broker."""
    with capture(execute=True):
        submission = submission_create(user=user, question=exercise.question, code="x = 1\n")
    return submission


def overdue(submission: Submission) -> None:
    Submission.objects.filter(pk=submission.pk).update(
        deadline_at=timezone.now() - timedelta(seconds=1)
    )


@requires_redis
def test_a_submission_waiting_in_a_backlog_is_not_re_sent(
    user, exercise, broker, django_capture_on_commit_callbacks
):
    # Past its queue deadline but its message is in the broker: it is waiting its turn.
    submission = queued(user, exercise, django_capture_on_commit_callbacks)
    overdue(submission)
    assert broker.llen("cpu") == 1
    assert submission_sweep() == {"requeued": 0, "failed": 0, "restored": 0}
    assert broker.llen("cpu") == 1


@requires_redis
def test_a_submission_whose_message_was_lost_is_re_sent(
    user, exercise, broker, django_capture_on_commit_callbacks
):
    submission = queued(user, exercise, django_capture_on_commit_callbacks)
    broker.delete("cpu")  # the message went missing (never sent, or dropped)
    overdue(submission)
    with django_capture_on_commit_callbacks(execute=True):
        assert submission_sweep() == {"requeued": 1, "failed": 0, "restored": 0}
    assert broker.llen("cpu") == 1


@requires_redis
def test_a_broker_that_lost_its_state_gets_every_queued_message_back_at_once(
    user, exercise, broker, django_capture_on_commit_callbacks
):
    # Redis restarted without persistence: queued rows are nowhere near their deadline, and
    # their messages are gone. The next sweep sends them again, without counting a try. (Two
    # learners: a learner's second submission would be held, which the sweep leaves alone.)
    first = queued(user, exercise, django_capture_on_commit_callbacks)
    second = queued(UserFactory(username="other"), exercise, django_capture_on_commit_callbacks)
    Submission.objects.update(queued_at=timezone.now() - timedelta(seconds=10))
    broker.flushdb()
    with django_capture_on_commit_callbacks(execute=True):
        assert submission_sweep() == {"requeued": 0, "failed": 0, "restored": 2}
    assert broker.llen("cpu") == 2
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.tries, second.tries) == ("queued", 0, 0)
    assert submission_sweep() == {"requeued": 0, "failed": 0, "restored": 0}  # once only


@requires_redis
def test_without_a_cpu_worker_a_queued_submission_says_so_until_one_connects(
    user, exercise, broker, django_capture_on_commit_callbacks
):
    submission = queued(user, exercise, django_capture_on_commit_callbacks)
    submission.refresh_from_db()
    assert submission.message == NO_WORKER["cpu"]
    workers.worker_announce(queue="cpu", name="cpu@test")
    submission_sweep()
    submission.refresh_from_db()
    assert submission.message == ""
    workers.worker_withdraw(queue="cpu", name="cpu@test")
    submission_sweep()
    submission.refresh_from_db()
    assert submission.message == NO_WORKER["cpu"]


@requires_redis
def test_a_submission_no_worker_takes_still_ends_with_that_reason(
    user, gpu_exercise, broker, django_capture_on_commit_callbacks
):
    # Its message waits in the broker, but no GPU worker is online: each deadline counts as a try.
    with django_capture_on_commit_callbacks(execute=True):
        submission = submission_create(user=user, question=gpu_exercise.question, code="x = 1\n")
    for _ in range(3):
        overdue(submission)
        submission_sweep()
    overdue(submission)
    assert submission_sweep() == {"requeued": 0, "failed": 1, "restored": 0}
    submission.refresh_from_db()
    assert submission.status == "error"
    assert "no GPU worker picked it up" in submission.message
    assert broker.llen("gpu") == 1  # never sent twice


def deliver(broker, *, ago: float, eta: float | None = None) -> bytes:
    """Move the queued message into Redis's unacknowledged set, as a worker taking it does
    (kombu's `unacked` hash and `unacked_index`), `ago` seconds ago; returns its delivery tag."""
    payload = json.loads(broker.rpop("cpu"))
    if eta is not None:
        payload["headers"]["eta"] = datetime.fromtimestamp(time.time() + eta, UTC).isoformat()
    tag = payload["properties"]["delivery_tag"].encode()
    broker.hset("unacked", tag, json.dumps([payload, "cpu", "cpu"]))
    broker.zadd("unacked_index", {tag: time.time() - ago})
    return tag


@requires_redis
def test_a_message_taken_by_a_worker_that_never_started_it_is_re_sent_at_once(
    user, exercise, broker, django_capture_on_commit_callbacks
):
    # The worker died between taking the message and marking the row running: long before the
    # row's queue deadline, the sweep sends it again and forgets the dead worker's delivery.
    submission = queued(user, exercise, django_capture_on_commit_callbacks)
    tag = deliver(broker, ago=60)
    with django_capture_on_commit_callbacks(execute=True):
        assert submission_sweep() == {"requeued": 1, "failed": 0, "restored": 0}
    assert broker.llen("cpu") == 1
    assert not broker.hexists("unacked", tag) and broker.zscore("unacked_index", tag) is None
    submission.refresh_from_db()
    assert (submission.status, submission.tries) == ("queued", 1)


@requires_redis
@pytest.mark.parametrize(("ago", "eta"), [(1, None), (60, 5)], ids=["just taken", "retry waiting"])
def test_a_message_a_worker_is_about_to_start_is_left_to_it(
    user, exercise, broker, django_capture_on_commit_callbacks, ago, eta
):
    submission = queued(user, exercise, django_capture_on_commit_callbacks)
    tag = deliver(broker, ago=ago, eta=eta)
    assert submission_sweep() == {"requeued": 0, "failed": 0, "restored": 0}
    assert broker.hexists("unacked", tag) and broker.llen("cpu") == 0
    submission.refresh_from_db()
    assert (submission.status, submission.tries) == ("queued", 0)


@requires_redis
def test_a_queue_whose_grading_works_is_not_called_offline_after_redis_lost_its_keys(
    user, exercise, broker, django_capture_on_commit_callbacks
):
    # Redis restarted without its keys (the worker's presence key went with them) while a worker
    # grades a submission under a live lease: nobody is told no worker is online.
    stuck(UserFactory(username="being-graded"), exercise, ago=-5)
    broker.flushdb()
    assert not workers.worker_online("cpu")
    submission = queued(user, exercise, django_capture_on_commit_callbacks)
    submission.refresh_from_db()
    assert submission.message == ""
    submission_sweep()
    submission.refresh_from_db()
    assert submission.message == ""
