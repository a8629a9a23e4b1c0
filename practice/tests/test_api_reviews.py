"""GET/POST /api/reviews/: the review session through the API, code cards graded by the real
sandbox (in-process here) through POST /api/submissions/."""

from datetime import timedelta

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from practice.models import Activity, CodeReview, ReviewCard
from practice.services import learning
from practice.tests.factories import BookmarkFactory
from quizbank.tests.factories import HintFactory, QuestionFactory, TopicFactory

from .test_api_submissions import RIGHT, WRONG

pytestmark = pytest.mark.django_db
Rating = Activity.Rating


def due_card(user, question, rating=Rating.GOOD):
    learning.review_rate(user=user, question=question, rating=rating)
    ReviewCard.objects.filter(user=user, question=question).update(
        due=timezone.now() - timedelta(days=2)
    )
    return ReviewCard.objects.get(user=user, question=question)


def test_the_session_lists_the_deck_what_remains_and_the_intervals(api, user):
    topic = TopicFactory(slug="autograd")
    first = QuestionFactory(slug="leaf", primary_topic=topic)
    due_card(user, first)
    due_card(user, QuestionFactory(slug="elsewhere"))
    BookmarkFactory(user=user, question=QuestionFactory(slug="bookmarked-new"))
    api.force_authenticate(user)
    body = api.get("/api/reviews/").json()
    assert body["deck"] == "all" and body["remaining"] == 2 and body["undo"] is None
    assert [c["question"] for c in body["cards"]][0] in ("leaf", "elsewhere")
    assert body["intervals"]["again"] < body["intervals"]["good"] < body["intervals"]["easy"]
    body = api.get("/api/reviews/?deck=topic&topic=autograd").json()
    assert body["topic"] == "autograd" and [c["question"] for c in body["cards"]] == ["leaf"]
    body = api.get("/api/reviews/?deck=bookmarks").json()
    assert body["cards"] == [
        {
            "question": "bookmarked-new",
            "title": body["cards"][0]["title"],
            "kind": "concept",
            "due": None,
        }
    ]
    response = api.get("/api/reviews/?deck=nope")
    assert response.status_code == 400 and "deck" in response.json()
    response = api.get("/api/reviews/?deck=topic&topic=nope")
    assert response.status_code == 400 and "topic" in response.json()


def test_rate_then_undo_restores_the_card_exactly(api, user):
    question = QuestionFactory(slug="strides")
    card = due_card(user, question)
    before = model_to_dict(card)
    api.force_authenticate(user)
    response = api.post("/api/reviews/strides/rate/", {"rating": "hard"}, format="json")
    assert response.status_code == 200 and response.json()["last_rating"] == Rating.HARD
    undo = api.get("/api/reviews/").json()["undo"]
    assert undo["question"] == "strides" and undo["value"] == "Hard"
    assert (
        api.post("/api/reviews/undo/", {"rating": undo["rating"]}, format="json").status_code == 200
    )
    card.refresh_from_db()
    assert model_to_dict(card) == before
    assert not Activity.objects.filter(pk=undo["rating"]).exists()
    response = api.post("/api/reviews/undo/", {"rating": undo["rating"]}, format="json")
    assert response.status_code == 404  # that rating is gone
    response = api.post("/api/reviews/strides/rate/", {"rating": "perfect"}, format="json")
    assert response.status_code == 400 and "rating" in response.json()


def test_another_learners_review_is_404_everywhere(api, user, django_user_model, exercise):
    other = django_user_model.objects.create_user("other")
    theirs = QuestionFactory(slug="theirs")
    due_card(other, theirs)
    due_card(other, exercise.question)
    CodeReview.objects.create(user=other, question=exercise.question, started_at=timezone.now())
    api.force_authenticate(other)
    api.post("/api/reviews/theirs/rate/", {"rating": "good"}, format="json")
    their_rating = api.get("/api/reviews/").json()["undo"]["rating"]

    api.force_authenticate(user)
    assert api.get("/api/reviews/").json()["cards"] == []
    assert api.get("/api/reviews/?deck=missed").json()["undo"] is None
    assert api.post("/api/reviews/theirs/rate/", {"rating": "again"}).status_code == 404
    assert api.post("/api/reviews/undo/", {"rating": their_rating}).status_code == 404
    for action in ("solve", "hint", "give-up"):
        assert api.post(f"/api/reviews/double-it/{action}/").status_code == 404, action
    assert ReviewCard.objects.get(user=other, question=theirs).last_rating == Rating.GOOD
    api.force_authenticate(None)
    assert api.get("/api/reviews/").status_code in (401, 403)


def test_a_code_card_solved_again_through_the_api_is_rated_by_the_grader(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    HintFactory(question=exercise.question, text="Times two.")
    card = due_card(user, exercise.question)
    reviews = card.reviews
    api.force_authenticate(user)
    body = api.post("/api/reviews/double-it/solve/").json()
    assert body["starter_code"].startswith("def double") and body["retries"] == 0
    assert api.post("/api/reviews/double-it/rate/", {"rating": "good"}).status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/api/submissions/", {"question": "double-it", "code": WRONG}, format="json")
    assert api.post("/api/reviews/double-it/solve/").json()["retries"] == 1
    body = api.post("/api/reviews/double-it/hint/").json()
    assert body["hints"] == ["Times two."] and body["hints_used"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/api/submissions/", {"question": "double-it", "code": RIGHT}, format="json")
    card.refresh_from_db()
    assert card.last_rating == Rating.HARD and card.reviews == reviews + 1
    assert timezone.localtime(card.due).date() > timezone.localdate()
    # It is over: giving up now is a 404; a new solve opens a fresh review.
    assert api.post("/api/reviews/double-it/give-up/").status_code == 404
    body = api.post("/api/reviews/double-it/solve/").json()
    assert body["retries"] == 0 and body["hints_used"] == 0
    response = api.post("/api/reviews/double-it/give-up/")
    assert response.status_code == 200 and response.json()["last_rating"] == Rating.AGAIN
