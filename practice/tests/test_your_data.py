import csv
import io
import json

import pytest
from django.utils import timezone

from accounts.models import Profile, User
from practice.models import (
    Activity,
    Bookmark,
    CodeReview,
    MockInterview,
    Note,
    PlanEnrollment,
    QuestionProgress,
    ReviewCard,
    StudyPlan,
    Submission,
)
from practice.services import interviews, learning, plans
from practice.tests.factories import SubmissionFactory
from quizbank.models import Question
from quizbank.tests.factories import QuestionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(user):
    """A learner who has done a bit of everything."""
    Profile.objects.get_or_create(user=user, defaults={"display_name": "Ada"})
    question = QuestionFactory(slug="the-question")
    learning.review_rate(user=user, question=question, rating=Activity.Rating.HARD)
    learning.bookmark_toggle(user=user, question=question)
    learning.note_save(user=user, question=question, text="Remember strides.")
    SubmissionFactory(user=user, code="def mine(): ...\n", status="failed")
    interview = interviews.interview_create(
        user=user, topics=[question.primary_topic], difficulty=[], questions=1, minutes=10
    )
    interviews.interview_answer(
        interview=interview, question=interview.items.get().question, text="My answer."
    )
    plan = StudyPlan.objects.create(slug="p", title="P", description="d")
    plans.plan_start(user=user, plan=plan)
    return user


def owned(user):
    return {
        model.__name__: model.objects.filter(user=user).count()
        for model in (
            Activity,
            Bookmark,
            MockInterview,
            Note,
            PlanEnrollment,
            QuestionProgress,
            ReviewCard,
            Submission,
            Profile,
        )
    }


def test_the_export_holds_everything_the_account_owns(client, busy, django_user_model):
    other = django_user_model.objects.create_user("other")
    learning.note_save(user=other, question=QuestionFactory(), text="Not yours.")
    question = Question.objects.get(slug="the-question")
    CodeReview.objects.create(user=busy, question=question, started_at=timezone.now())
    CodeReview.objects.create(user=other, question=question, started_at=timezone.now())
    client.force_login(busy)
    # A browser's Accept header (the profile's button): still the JSON file, not the API page.
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = client.get("/api/me/export/", HTTP_ACCEPT=browser)
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith('attachment; filename="quizbank-learner-')
    body = b"".join(response.streaming_content).decode()
    data = json.loads(body)
    assert data["account"]["username"] == "learner"
    assert data["profile"]["display_name"] == "Ada"
    assert [n["text"] for n in data["notes"]] == ["Remember strides."]
    assert [b["question__slug"] for b in data["bookmarks"]] == ["the-question"]
    assert data["submissions"][0]["code"] == "def mine(): ...\n"
    assert data["review_cards"][0]["question__slug"] == "the-question"
    assert [r["rating"] for r in data["review_log"]] == [2]
    assert {a["kind"] for a in data["activity"]} == {"rating"}
    assert data["interviews"][0]["questions"][0]["your_answer"] == "My answer."
    assert data["plans"][0]["plan__slug"] == "p"
    assert [(r["question__slug"], r["rating"]) for r in data["code_reviews"]] == [
        ("the-question", None)
    ]
    assert "Not yours." not in body
    # the bank's model answer is the bank's, not the learner's
    assert data["interviews"][0]["questions"][0]["model_answer"] == ""


def test_the_export_runs_a_fixed_number_of_queries(client, busy, django_assert_num_queries):
    client.force_login(busy)
    with django_assert_num_queries(14):  # one query per kind of row, code reviews included
        b"".join(client.get("/api/me/export/").streaming_content)


def test_activity_comes_as_csv(client, busy):
    client.force_login(busy)
    response = client.get("/api/me/export/activity/")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["kind"], r["question"], r["rating"]) for r in rows] == [
        ("rating", "the-question", "2")
    ]


def test_the_export_is_only_for_the_signed_in_owner(api):
    assert api.get("/api/me/export/").status_code in (401, 403)
    assert api.get("/api/me/export/activity/").status_code in (401, 403)


def test_the_profile_offers_the_export_and_deletion(client, user):
    client.force_login(user)
    body = client.get("/accounts/profile/").content.decode()
    assert 'href="/api/me/export/"' in body and 'href="/api/me/export/activity/"' in body
    assert 'href="/accounts/delete/"' in body


def test_deleting_the_account_needs_the_password_and_removes_everything(
    client, busy, django_user_model
):
    other = django_user_model.objects.create_user("other")
    learning.note_save(user=other, question=QuestionFactory(), text="Still here.")
    client.force_login(busy)
    assert any(owned(busy).values())
    response = client.post("/accounts/delete/", {"password": "wrong"})
    assert "That is not your password." in response.content.decode()
    assert User.objects.filter(pk=busy.pk).exists()
    response = client.post("/accounts/delete/", {"password": "a-long-test-password"}, follow=True)
    assert "Your account and everything in it were deleted." in response.content.decode()
    assert not User.objects.filter(pk=busy.pk).exists()
    assert not any(owned(busy).values())
    assert Note.objects.get(user=other).text == "Still here."
    assert client.get("/accounts/profile/").status_code == 302


def test_a_username_beyond_ascii_gets_a_download_name_too(client, django_user_model):
    learner = django_user_model.objects.create_user("Zoë_学习者", password="x-long-password-1")
    client.force_login(learner)
    for path in ("/api/me/export/", "/api/me/export/activity/"):
        response = client.get(path)
        assert response.status_code == 200
        disposition = response["Content-Disposition"]
        assert disposition.startswith("attachment; filename*=utf-8''quizbank-Zo%C3%AB_")


def test_the_export_streams_in_bounded_chunks_whatever_the_account_size(client, busy, settings):
    from practice.selectors.export import CHUNK
    from quizbank.api.streaming import CHUNK_BYTES

    Submission.objects.bulk_create(
        [
            Submission(
                user=busy, question=Question.objects.get(slug="the-question"), code="x" * 3000
            )
            for _ in range(300)
        ]
    )
    settings.INTERVIEWS_PER_DAY = CHUNK + 10
    for _ in range(CHUNK + 5):  # interviews come in chunks of CHUNK: two chunks here
        interviews.interview_create(
            user=busy,
            topics=[Question.objects.get(slug="the-question").primary_topic],
            difficulty=[],
            questions=1,
            minutes=10,
        )
    client.force_login(busy)
    response = client.get("/api/me/export/")
    assert response.streaming
    sizes = [len(chunk) for chunk in response.streaming_content]
    assert len(sizes) > 10 and max(sizes) < 2 * CHUNK_BYTES  # never the whole document at once
