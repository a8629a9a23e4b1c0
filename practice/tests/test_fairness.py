"""Issue 13, finding 8: one learner's slow code cannot delay another learner's verdict by more
than about one run. Through a real Celery worker on a private Redis and the real sandbox: a
learner's submissions beyond GRADER_USER_IN_FLIGHT wait as rows and are sent one by one, the
limit a submission runs under is fitted to the exercise's reference, and the sweep releases a
held row whose hand-off was lost."""

import pytest
from django.db import connection
from django.utils import timezone

from accounts.tests.factories import UserFactory
from practice.models import Submission
from practice.services.dispatch import held_message, lane_message
from practice.services.submissions import submission_create
from practice.services.sweep import submission_sweep
from practice.tests import test_reliability as reliability
from practice.tests.test_reliability import RIGHT, wait_for

# The private Redis and the real worker of the reliability tests.
redis_server = reliability.redis_server
worker = reliability.worker

SLEEPER = "import time\ntime.sleep(60)\n\ndef double(x):\n    return x * 2\n"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="a worker process needs a shared database"
    ),
]


def finished(submission: Submission) -> bool:
    submission.refresh_from_db()
    return submission.status not in Submission.UNFINISHED


def in_flight(user) -> int:
    return Submission.objects.unfinished().filter(user=user, held=False).count()


@pytest.fixture
def cap_of_one(settings, monkeypatch):
    settings.GRADER_USER_IN_FLIGHT = 1
    monkeypatch.setenv("GRADER_USER_IN_FLIGHT", "1")  # the worker's, which releases held rows


def test_a_backlog_of_slow_code_does_not_delay_another_learners_verdict(
    client, user, exercise, cap_of_one, worker, settings
):
    # A backlog bigger than the submission budget allows, as a learner had before the budget.
    settings.SUBMISSIONS_WAITING_MAX = 100
    other = UserFactory(username="other")
    worker()  # two threads
    # The first full grade measures the reference: from then on the limit is fitted to it.
    first = submission_create(user=other, question=exercise.question, code=RIGHT)
    wait_for(lambda: finished(first), "the first verdict", 120)
    assert first.status == "passed"
    exercise.refresh_from_db()
    assert exercise.reference_seconds is not None
    limit = exercise.fitted_time_limit
    assert limit < exercise.time_limit

    question = exercise.question
    slow = [submission_create(user=user, question=question, code=SLEEPER) for _ in range(6)]
    held = Submission.objects.filter(user=user, held=True)
    assert held.count() == 5
    # (The worker announces itself in its own Redis, so "no CPU worker" may follow ours.)
    assert all(m.startswith(held_message(1)) for m in held.values_list("message", flat=True))
    assert all(s.deadline_at is None for s in held)
    client.force_login(user)
    page = client.get(f"/submissions/{slow[-1].pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "Waiting for your earlier submission to finish" in page  # the learner is told why

    wait_for(lambda: Submission.objects.filter(pk=slow[0].pk, status="running").exists(), "a run")
    mine = submission_create(user=other, question=exercise.question, code=RIGHT)
    assert not Submission.objects.get(pk=mine.pk).held
    seen_in_flight = []
    slow_done_before_mine = []

    def mine_finished() -> bool:
        seen_in_flight.append(in_flight(user))
        slow_done = Submission.objects.filter(pk__in=[s.pk for s in slow]).exclude(
            status__in=Submission.UNFINISHED
        )
        slow_done_before_mine.append(slow_done.count())
        return finished(mine)

    wait_for(mine_finished, "the other learner's verdict", 60)
    assert mine.status == "passed"
    # Without the cap the broker's queue is FIFO: it would have waited for the slow ones ahead.
    assert slow_done_before_mine[-1] <= 1
    # Sent while the slow learner's backlog was still waiting: it overtook at least four of them.
    assert Submission.objects.filter(pk__in=[s.pk for s in slow], held=True).count() >= 4
    assert max(seen_in_flight) <= 1

    def backlog_done() -> bool:
        seen_in_flight.append(in_flight(user))
        return not Submission.objects.filter(user=user).unfinished().exists()

    wait_for(backlog_done, "the slow backlog to drain", 6 * (limit + 10))
    assert max(seen_in_flight) <= 1
    statuses = set(Submission.objects.filter(user=user).values_list("status", flat=True))
    assert statuses == {"timed_out"}
    ended = Submission.objects.filter(user=user).first()
    assert f"time limit of {limit:g} s" in ended.message


def test_the_sweep_releases_a_held_submission_whose_hand_off_was_lost(
    user, exercise, cap_of_one, worker
):
    first = submission_create(user=user, question=exercise.question, code=RIGHT)
    second = submission_create(user=user, question=exercise.question, code=RIGHT)
    assert Submission.objects.get(pk=second.pk).held
    # The first one's worker finished it and died before handing over: no message for the second.
    Submission.objects.filter(pk=first.pk).update(status="passed", deadline_at=None)
    worker()
    submission_sweep()
    assert not Submission.objects.get(pk=second.pk).held
    wait_for(lambda: finished(second), "the released submission's verdict", 120)
    assert second.status == "passed"
    assert not second.held


def test_without_a_cap_every_submission_is_sent_at_once(user, exercise, redis_server, settings):
    settings.GRADER_USER_IN_FLIGHT = 0
    for _ in range(3):
        submission_create(user=user, question=exercise.question, code=RIGHT)
    assert not Submission.objects.filter(held=True).exists()
    assert Submission.objects.filter(deadline_at__isnull=True).count() == 0


def test_a_held_gpu_submission_still_says_no_gpu_worker_is_online(
    user, gpu_exercise, redis_server, cap_of_one
):
    from practice.services.submissions import NO_GPU_WORKER

    question = gpu_exercise.question
    first = submission_create(user=user, question=question, code=RIGHT)
    second = submission_create(user=user, question=question, code=RIGHT)
    assert Submission.objects.get(pk=first.pk).message == NO_GPU_WORKER
    held = Submission.objects.get(pk=second.pk)
    assert held.held
    assert held.message == f"{held_message(1)} {NO_GPU_WORKER}"


def _ran_a_lot(learner, question) -> None:
    """A learner who ran a minute of code just now (more than GRADER_HEAVY_SECONDS)."""
    now = timezone.now()
    Submission.objects.create(
        user=learner,
        question=question,
        code=SLEEPER,
        status="timed_out",
        finished_at=now,
        duration_ms=60_000,
    )


@pytest.fixture
def lane_of_one(settings, monkeypatch, cap_of_one):
    """Two slots (the test worker runs two threads), heavy learners sharing one of them."""
    for name, value in (("GRADER_SLOTS", 2), ("GRADER_HEAVY_IN_FLIGHT", 1)):
        setattr(settings, name, value)
        monkeypatch.setenv(name, str(value))  # the worker's, which releases the lane's next
    settings.SUBMISSIONS_WAITING_MAX = 100


def test_heavy_learners_share_the_lane_and_a_light_one_is_sent_at_once(
    user, exercise, redis_server, lane_of_one
):
    question = exercise.question
    heavy = [UserFactory(username=f"heavy{i}") for i in range(2)]
    for learner in heavy:
        _ran_a_lot(learner, question)
    first, second = (submission_create(user=h, question=question, code=SLEEPER) for h in heavy)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.held, first.heavy) == (False, True)  # the lane's one place
    assert (second.held, second.heavy) == (True, True)  # another learner's: no room left
    assert second.message.startswith(lane_message(1)) and second.deadline_at is None
    mine = submission_create(user=user, question=question, code=RIGHT)
    mine.refresh_from_db()
    assert (mine.held, mine.heavy) == (False, False)  # no backlog, little code run: sent
    # The learner's own second one waits for their first, as before the lane.
    again = submission_create(user=heavy[0], question=question, code=SLEEPER)
    assert Submission.objects.get(pk=again.pk).message.startswith(held_message(1))


def test_a_learner_who_grades_little_is_not_queued_behind_heavy_learners(
    user, exercise, worker, lane_of_one
):
    """Issue 28: beside four abusive accounts each keeping a slot busy with sleeping code, a
    normal learner's p95 was 3.3x its idle figure with four slots. Three heavy learners and two
    slots here: without the lane, two sleepers fill the slots and the third waits in the broker
    ahead of the normal learner's submission, which then waits for a whole run."""
    worker()
    other = UserFactory(username="other")
    first = submission_create(user=other, question=exercise.question, code=RIGHT)
    wait_for(lambda: finished(first), "the first verdict (it measures the reference)", 120)
    question = exercise.question
    heavy = [UserFactory(username=f"heavy{i}") for i in range(3)]
    for learner in heavy:
        _ran_a_lot(learner, question)
    slow = [
        submission_create(user=learner, question=question, code=SLEEPER)
        for _ in range(2)
        for learner in heavy
    ]
    wait_for(lambda: Submission.objects.filter(pk=slow[0].pk, status="running").exists(), "a run")
    mine = submission_create(user=user, question=question, code=RIGHT)
    seen_heavy_in_flight = []
    slow_done_before_mine = []

    def heavy_in_flight() -> int:
        rows = Submission.objects.filter(pk__in=[s.pk for s in slow], held=False)
        return rows.unfinished().count()

    def mine_finished() -> bool:
        seen_heavy_in_flight.append(heavy_in_flight())
        done = Submission.objects.filter(pk__in=[s.pk for s in slow]).exclude(
            status__in=Submission.UNFINISHED
        )
        slow_done_before_mine.append(done.count())
        return finished(mine)

    wait_for(mine_finished, "the light learner's verdict", 60)
    assert mine.status == "passed"
    assert slow_done_before_mine[-1] == 0  # it waited for no sleeper's run to end
    assert max(seen_heavy_in_flight) <= 1

    def backlog_done() -> bool:
        seen_heavy_in_flight.append(heavy_in_flight())
        return not Submission.objects.filter(pk__in=[s.pk for s in slow]).unfinished().exists()

    wait_for(backlog_done, "the heavy backlogs to drain", 6 * 20)
    assert max(seen_heavy_in_flight) <= 1
    # First come, first served across learners: each heavy verdict sent another learner's next.
    started = Submission.objects.filter(pk__in=[s.pk for s in slow]).order_by("started_at")
    assert [s.user_id for s in started[:3]] == [h.pk for h in heavy]
