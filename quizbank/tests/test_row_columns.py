"""Pages and the API read a question's rows without what search and load_bank derive and store
with it (Question.DERIVED_FIELDS): its symptom passages' embeddings alone are 17 kB a row."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from quizbank.models import Question

from .factories import ExerciseFactory, HintFactory, QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db

SELECTED = re.compile(r"^\s*SELECT\s+(.*?)\s+FROM\s", re.S | re.I)


def derived_columns_read(queries) -> list[tuple[str, str]]:
    """The derived columns selected by queries that read questions as rows to show (those that
    select a title): what search reads for its own ranking selects no title."""
    found = []
    for query in queries:
        selected = SELECTED.match(query["sql"])
        if selected is None or '"quizbank_question"."title"' not in selected.group(1):
            continue
        found += [
            (name, query["sql"][:80])
            for name in Question.DERIVED_FIELDS
            if f'"quizbank_question"."{name}"' in selected.group(1)
        ]
    return found


@pytest.fixture
def question():
    topic = TopicFactory(slug="autograd")
    question = QuestionFactory(
        slug="exploding-gradients",
        title="Why does the gradient explode?",
        prompt="Training diverges when the gradient explodes.",
        primary_topic=topic,
        kind="code",
    )
    HintFactory(question=question)
    ExerciseFactory(question=question)
    QuestionFactory(slug="other", title="Views and copies", primary_topic=topic)
    return question


URLS = [
    "/api/questions/",
    "/api/questions/?search=gradient+explodes",
    "/api/questions/exploding-gradients/",
    "/questions/",
    "/questions/?search=gradient+explodes",
    "/questions/exploding-gradients/",
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("staff", [False, True], ids=["learner", "staff"])
def test_a_page_reads_no_derived_column_of_a_question(
    client, django_user_model, question, url, staff
):
    if staff:
        client.force_login(django_user_model.objects.create_user("curator", is_staff=True))
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert (
        b"exploding-gradients" in response.content or b"Why does the gradient" in response.content
    )
    assert any('"quizbank_question"."title"' in q["sql"] for q in queries.captured_queries)
    assert derived_columns_read(queries.captured_queries) == []


def test_the_admins_question_list_reads_no_derived_column(client, django_user_model, question):
    client.force_login(django_user_model.objects.create_superuser("boss", password="a-long-pw-1"))
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/admin/quizbank/question/")
    assert response.status_code == 200
    assert b"Why does the gradient explode?" in response.content
    assert any('"quizbank_question"."title"' in q["sql"] for q in queries.captured_queries)
    assert derived_columns_read(queries.captured_queries) == []
