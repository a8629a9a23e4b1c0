from datetime import timedelta

import pytest
from django.utils import timezone

from practice.models import Activity
from practice.selectors.progress import _streaks
from practice.services import learning
from quizbank.tests.factories import QuestionFactory, QuickCheckFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def practised(user):
    tensors = TopicFactory(slug="tensors", name="Tensors")
    autograd = TopicFactory(slug="autograd", name="Autograd")
    solved = QuestionFactory(primary_topic=tensors, title="Solved one")
    tried = QuestionFactory(primary_topic=tensors, title="Tried one")
    QuestionFactory(primary_topic=autograd)
    learning.review_rate(user=user, question=solved, rating=Activity.Rating.GOOD)
    learning.quick_check_answer(user=user, check=QuickCheckFactory(question=tried), response=0)
    return {"solved": solved, "tried": tried}


def test_the_progress_api_gives_mastery_per_topic_activity_and_streak(api, user, practised):
    api.force_authenticate(user)
    body = api.get("/api/progress/").json()
    topics = {t["slug"]: t for t in body["topics"]}
    assert topics["tensors"] == {
        "slug": "tensors",
        "name": "Tensors",
        "solved": 1,
        "attempted": 1,
        "total": 2,
    }
    assert topics["autograd"]["solved"] == 0 and topics["autograd"]["total"] == 1
    assert body["totals"] == {
        "solved": 1,
        "attempted": 1,
        "questions": 3,
        "reviews_due": 0,
        "active_days": 1,
    }
    assert body["streak"] == {"current": 1, "longest": 1}
    assert body["days"] == [{"date": timezone.localdate().isoformat(), "count": 2}]
    assert [r["description"] for r in body["recent"]] == [
        "Answered a quick check wrong",
        "Rated recall: good",
    ]


def test_the_progress_page_draws_the_same_figures(client, user, practised):
    client.force_login(user)
    body = client.get("/progress/").content.decode()
    assert "Mastery by topic" in body and "1 solved · 1 tried · 2" in body
    assert 'class="heatmap"' in body and "2 things done" in body
    assert "Solved one" in body and "1 day" in body


def test_progress_is_private(api, client, user, django_user_model, practised):
    other = django_user_model.objects.create_user("other")
    api.force_authenticate(other)
    body = api.get("/api/progress/").json()
    assert body["totals"]["solved"] == 0 and body["recent"] == [] and body["days"] == []
    client.force_login(other)
    assert "Solved one" not in client.get("/progress/").content.decode()


def test_progress_needs_a_signed_in_learner(api, client):
    assert api.get("/api/progress/").status_code in (401, 403)
    assert client.get("/progress/")["Location"] == "/accounts/login/?next=/progress/"


def test_a_streak_counts_consecutive_days_up_to_today_or_yesterday():
    today = timezone.localdate()
    day = timedelta(days=1)
    assert _streaks({today, today - day, today - 2 * day}, today) == (3, 3)
    assert _streaks({today - day, today - 2 * day}, today) == (2, 2)
    assert _streaks({today - 2 * day, today - 5 * day, today - 6 * day}, today) == (0, 2)
    assert _streaks(set(), today) == (0, 0)


def test_activity_on_a_past_day_shows_on_the_heatmap(api, user, practised):
    Activity.objects.filter(kind="rating").update(created_at=timezone.now() - timedelta(days=1))
    api.force_authenticate(user)
    body = api.get("/api/progress/").json()
    assert [d["count"] for d in body["days"]] == [1, 1]
    assert body["streak"] == {"current": 2, "longest": 2}


def test_an_unpublished_question_keeps_the_learners_history_but_not_its_content(client, user):
    from practice.services import learning
    from quizbank.tests.factories import QuestionFactory

    question = QuestionFactory(title="A secret draft title", slug="was-public")
    learning.answer_reveal(user=user, question=question)
    learning.review_rate(user=user, question=question, rating=3)
    question.status = "archived"
    question.save()
    client.force_login(user)
    body = client.get("/api/progress/").json()
    (row, *_) = body["recent"]
    assert (
        row["question"] is None
        and row["question_title"] == "A question that is no longer published"
    )
    page = client.get("/progress/").content.decode()
    assert "A secret draft title" not in page and "/questions/was-public/" not in page
    assert "no longer published" in page
    # Nor does it come back for review.
    assert "was-public" not in client.get("/review/").content.decode()
