"""Schemathesis against the OpenAPI schema, in-process: generated requests to every operation
(bounded examples) must never get a 5xx, and every documented response must match its schema;
once anonymous, and once as a learner signed in with an API token who has an exercise to submit
to, a submission, a mock interview and a review card, so the operations behind sign-in run past
their 401. The examples are few (the suite's time is short); `derandomize` keeps each run the
same."""

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from accounts.services import token_create
from accounts.tests.factories import UserFactory
from practice.models import Bookmark, Submission
from practice.services.interviews import interview_create
from quizbank.tests.factories import ExerciseFactory, QuestionFactory

schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
CHECKS = (not_a_server_error, response_schema_conformance)


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    # The WSGI handler closes the database connection after each request, which would end the
    # test's transaction; Django's own test client disconnects the same handler.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def token(db):
    """A learner's API key; what they have gives the read operations something to return."""
    user = UserFactory(username="fuzzer")
    question = QuestionFactory(slug="fuzz-exercise", kind="code")
    ExerciseFactory(question=question)
    Submission.objects.create(user=user, question=question, code="x = 1\n", status="passed")
    Bookmark.objects.create(user=user, question=question)
    interview_create(user=user, topics=[], difficulty=[], questions=1, minutes=30)
    return token_create(user=user, name="fuzz")[1]


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_api_never_fails_and_keeps_to_its_schema(case):
    case.call_and_validate(checks=CHECKS)


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_signed_in_the_api_never_fails_and_keeps_to_its_schema(case, token):
    response = case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)
    assert response.status_code != 401  # signed in: each case got past authentication
