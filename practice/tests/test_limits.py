"""Each limit lives in grader.limits; the database, the bank schema and the submission service
accept exactly what the grader accepts."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from grader import limits
from grader.jobs import JobError, normalize_job
from quizbank.bank.schema import exercise_errors
from quizbank.models import Exercise, Queue
from quizbank.tests.factories import ExerciseFactory, QuestionFactory

pytestmark = pytest.mark.django_db

CHECKS = [{"name": "doubles", "visible": True, "code": "out = f(1)", "compare": "out"}]


def grader_accepts(**meta) -> bool:
    job = {"code": "", "reference": "", "checks": CHECKS, "queue": "cpu", **meta}
    try:
        normalize_job(job)
    except JobError:
        return False
    return True


def schema_accepts(**meta) -> bool:
    record = {
        "meta": {"queue": "cpu", "checks": CHECKS, **meta},
        "starter_code": "def f(x):\n    raise NotImplementedError\n",
        "solution_code": "def f(x):\n    return x\n",
        "wrong_solutions": {},
    }
    return not exercise_errors(record)


def database_accepts(**fields) -> bool:
    exercise = ExerciseFactory.build(question=QuestionFactory(kind="code"), **fields)
    try:
        with transaction.atomic():
            exercise.save()
    except IntegrityError:
        return False
    return True


EDGES = [
    {"time_limit": limits.MAX_TIME_LIMIT},
    {"time_limit": limits.MAX_TIME_LIMIT + 0.5},
    {"time_limit": 90},
    {"time_limit": 0},
    {"memory_limit_mb": limits.MIN_MEMORY_MB},
    {"memory_limit_mb": limits.MIN_MEMORY_MB - 1},
    {"memory_limit_mb": limits.MAX_MEMORY_MB},
    {"memory_limit_mb": limits.MAX_MEMORY_MB + 1},
    {"queue": "gpu"},
    {"queue": "tpu"},
]


@pytest.mark.parametrize("edge", EDGES, ids=lambda e: f"{next(iter(e))}={next(iter(e.values()))}")
def test_the_database_and_the_schema_accept_what_the_grader_accepts(edge):
    expected = grader_accepts(**edge)
    assert schema_accepts(**edge) == expected
    assert database_accepts(**edge) == expected


def test_the_queue_enum_is_the_graders():
    assert tuple(Queue.values) == limits.QUEUES
    assert Exercise.Queue is Queue


def test_the_submission_size_limit_is_the_graders(user):
    from practice.services.submissions import submission_create

    question = QuestionFactory(kind="code")
    ExerciseFactory(question=question)
    code = "x = 1\n" + "#" * (limits.MAX_SOURCE_BYTES - 6)
    assert len(code.encode()) == limits.MAX_SOURCE_BYTES
    with pytest.raises(ValidationError) as error:
        submission_create(user=user, question=question, code=code + "#")
    assert "code" in error.value.message_dict
