"""Row locks taken in one order, on rows of one's own: two learners' transactions never wait on
each other (a deadlock answers 503; issue 28). PostgreSQL only:
SQLite has no row locks to take in the wrong order."""

import contextlib
import threading

import pytest
from django.db import connection, connections, transaction

from accounts.tests.factories import UserFactory
from practice.services import interviews, review
from quizbank.tests.factories import ExerciseFactory, QuestionFactory, TopicFactory

from .conftest import DOUBLE_CHECKS

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL"),
]


@pytest.fixture
def code_question(db):
    topic = TopicFactory(slug="basics", order=1)
    question = QuestionFactory(slug="double-it", kind="code", primary_topic=topic)
    ExerciseFactory(question=question, checks=DOUBLE_CHECKS)
    return topic, question


def in_thread(target, *args):
    """Run `target` in a thread with its own connection; returns (thread, result list)."""
    result: list = []

    def run():
        try:
            result.append(target(*args))
        except Exception as error:  # handed to the test, which asserts on it
            result.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def test_a_code_review_ending_does_not_hold_the_question_against_another_learners_interview(
    code_question,
):
    """Ending a code review locked the question's row (and the learner's) FOR UPDATE through a
    join; every learner starting an interview with that question then waited on it (and a third
    transaction closes the loop into a deadlock). Only the review's own row is locked now."""
    topic, question = code_question
    reviewer, starter = UserFactory(username="reviewer"), UserFactory(username="starter")
    open_review = review.code_review_start(user=reviewer, question=question)
    locked, release = threading.Event(), threading.Event()

    def give_up_and_hold():
        with transaction.atomic():
            review.code_review_give_up(review=open_review)
            locked.set()
            release.wait(30)  # the review's transaction stays open while the other starts

    thread, _ = in_thread(give_up_and_hold)
    try:
        assert locked.wait(30)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '3s'")
            started = interviews.interview_create(
                user=starter, topics=[topic], difficulty=[], questions=1, minutes=30
            )
    finally:
        release.set()
        thread.join()
    assert [item.question for item in started.items.all()] == [question]


def test_interviews_started_at_the_same_moment_by_several_learners_all_start(code_question):
    topic, question = code_question
    for i in range(5):
        QuestionFactory(slug=f"concept-{i}", primary_topic=topic)
    learners = [UserFactory(username=f"learner{i}") for i in range(4)]
    together = threading.Barrier(len(learners), timeout=10)

    def start(learner):
        together.wait()
        return [
            interviews.interview_create(
                user=learner, topics=[topic], difficulty=[], questions=6, minutes=30
            ).pk
            for _ in range(3)
        ]

    runs = [in_thread(start, learner) for learner in learners]
    for thread, _ in runs:
        thread.join(60)
    results = [result[0] for _, result in runs]
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sum(len(r) for r in results) == 12


def test_two_interviews_started_at_once_count_against_the_days_limit(
    code_question, settings, monkeypatch
):
    """Counting today's interviews and inserting the new one were not serialised: two starts at
    the same moment both counted none and both started, past INTERVIEWS_PER_DAY."""
    settings.INTERVIEWS_PER_DAY = 1
    topic, _ = code_question
    learner = UserFactory(username="double-click")
    counted = threading.Barrier(2)
    check = interviews._check_daily_limit

    def check_then_wait_for_the_other(*, user):
        check(user=user)
        # Give the other start its chance to count too (it cannot while this one holds the
        # learner's lock: then the wait runs out and this one commits first).
        with contextlib.suppress(threading.BrokenBarrierError):
            counted.wait(timeout=3)

    monkeypatch.setattr(interviews, "_check_daily_limit", check_then_wait_for_the_other)

    def start():
        return interviews.interview_create(
            user=learner, topics=[topic], difficulty=[], questions=1, minutes=30
        )

    runs = [in_thread(start) for _ in range(2)]
    for thread, _ in runs:
        thread.join(60)
    results = [result[0] for _, result in runs]
    assert learner.interviews.count() == 1
    assert sum(isinstance(r, interviews.InterviewLimitReached) for r in results) == 1
