"""The one check of a `next` URL (accounts' sign-in and sign-up, the question page's actions)."""

import pytest
from django.test import RequestFactory

from accounts.redirects import safe_next


@pytest.fixture
def rf():
    return RequestFactory()


def test_a_path_on_this_site_is_followed(rf):
    assert safe_next(rf.post("/"), "/questions/?topic=llm", "/") == "/questions/?topic=llm"


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/", "javascript:alert(1)", ""]
)
def test_anywhere_else_goes_to_the_default(rf, target):
    assert safe_next(rf.post("/"), target, "/home/") == "/home/"


def test_a_secure_page_never_sends_the_user_back_over_plain_http(rf):
    secure = rf.post("/", secure=True)
    assert safe_next(secure, "http://testserver/progress/", "/") == "/"
    assert safe_next(secure, "https://testserver/progress/", "/") == "https://testserver/progress/"


def test_the_question_pages_actions_use_it(client, django_user_model):
    # A learner's bookmark from an https page with an http `next` lands on the question, not there.
    from quizbank.tests.factories import QuestionFactory

    question = QuestionFactory(status="published")
    client.force_login(django_user_model.objects.create_user("ada", password="pw-123456789"))
    response = client.post(
        f"/questions/{question.slug}/bookmark/",
        {"next": "http://testserver/progress/"},
        secure=True,
    )
    assert response.status_code == 302
    assert response["Location"] != "http://testserver/progress/"
    response = client.post(
        f"/questions/{question.slug}/bookmark/",
        {"next": "https://testserver/progress/"},
        secure=True,
    )
    assert response["Location"] == "https://testserver/progress/"
