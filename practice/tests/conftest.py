import os

import pytest
from django.core.cache import cache

from quizbank.celery import app as celery_app
from quizbank.tests.factories import ExerciseFactory, QuestionFactory

DOUBLE_CHECKS = [
    {
        "name": "doubles an example",
        "visible": True,
        "code": "out = double(torch.ones(2))",
        "compare": "out",
    },
    {
        "name": "doubles a hidden tensor",
        "code": "SECRET_INPUT = torch.arange(7.0) * 13\nout = double(SECRET_INPUT)",
        "compare": "out",
    },
    {
        "name": "keeps the dtype",
        "code": "out = double(torch.tensor([1, 2], dtype=torch.int64))",
        "compare": ["out", "out.dtype"],
    },
    {"name": "handles an empty tensor", "code": "out = double(torch.empty(0))", "compare": "out"},
]


@pytest.fixture(autouse=True)
def _clean_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def eager(settings):
    """Grade in-process, as the development default does (no broker)."""
    previous = celery_app.conf.task_always_eager
    settings.CELERY_TASK_ALWAYS_EAGER = True
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def exercise(db):
    question = QuestionFactory(slug="double-it", kind="code")
    return ExerciseFactory(question=question, checks=DOUBLE_CHECKS, time_limit=10)


@pytest.fixture
def gpu_exercise(db):
    question = QuestionFactory(slug="double-on-gpu", kind="code")
    return ExerciseFactory(question=question, checks=DOUBLE_CHECKS, queue="gpu")


requires_redis = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="needs a real Redis (REDIS_URL), as in CI"
)
