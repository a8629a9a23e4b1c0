"""A learner's pages read the questions their rows name without what search stores with each
(quizbank/tests/test_row_columns.py has the bank's pages)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.tests.factories import UserFactory
from practice.models import QuestionProgress
from quizbank.tests.factories import QuickCheckFactory
from quizbank.tests.test_row_columns import derived_columns_read

from .factories import (
    ActivityFactory,
    QuestionProgressFactory,
    ReviewCardFactory,
    SubmissionFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def learner(client):
    user = UserFactory()
    submission = SubmissionFactory(user=user)
    question = submission.question
    ActivityFactory(user=user, question=question)
    ReviewCardFactory(user=user, question=question)
    QuestionProgressFactory(user=user, question=question, state=QuestionProgress.State.ATTEMPTED)
    QuickCheckFactory(question=question)
    client.force_login(user)
    return {"submission": submission.pk}


URLS = [
    "/",
    "/progress/",
    "/review/",
    "/submissions/{submission}/",
    "/api/submissions/",
    "/api/submissions/{submission}/",
    "/api/quick-checks/",
]


@pytest.mark.parametrize("url", URLS)
def test_a_learners_page_reads_no_derived_column_of_a_question(client, learner, url):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url.format(**learner))
    assert response.status_code == 200
    assert any('"quizbank_question"."title"' in q["sql"] for q in queries.captured_queries)
    assert derived_columns_read(queries.captured_queries) == []
