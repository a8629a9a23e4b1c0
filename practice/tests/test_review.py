from datetime import timedelta

import pytest
from django.utils import timezone

from practice.models import Activity, ReviewCard
from practice.services import learning
from quizbank.tests.factories import QuestionFactory

pytestmark = pytest.mark.django_db


def test_fsrs_schedules_easier_ratings_further_out(django_user_model):
    question = QuestionFactory()
    dues = {}
    for name, rating in (("again", 1), ("hard", 2), ("good", 3), ("easy", 4)):
        user = django_user_model.objects.create_user(f"rater-{name}")
        dues[name] = learning.review_rate(user=user, question=question, rating=rating).due
    assert dues["again"] < dues["good"] < dues["easy"]
    assert dues["easy"] - timezone.now() > timedelta(days=1)
    # "Hard" is never due again the same day, though FSRS's learning step would say minutes.
    tomorrow = timezone.localdate() + timedelta(days=1)
    assert timezone.localtime(dues["hard"]).date() >= tomorrow


def test_review_needs_a_signed_in_learner(client):
    assert client.get("/review/")["Location"] == "/accounts/login/?next=/review/"


def test_review_walks_through_what_is_due_most_overdue_first(client, user):
    first = QuestionFactory(title="Most overdue")
    second = QuestionFactory(title="Due later")
    learning.review_rate(user=user, question=first, rating=Activity.Rating.AGAIN)
    learning.review_rate(user=user, question=second, rating=Activity.Rating.AGAIN)
    ReviewCard.objects.filter(question=first).update(due=timezone.now() - timedelta(days=2))
    ReviewCard.objects.filter(question=second).update(due=timezone.now() - timedelta(days=1))
    client.force_login(user)
    body = client.get("/review/").content.decode()
    assert "<strong>2</strong> questions to go" in body
    assert "Most overdue" in body and "Due later" not in body
    response = client.post(f"/review/{first.slug}/rate/", {"rating": "easy"})
    assert response["Location"] == "/review/"
    body = client.get("/review/").content.decode()
    assert "<strong>1</strong> question to go" in body and "Due later" in body
    assert "Rated “easy”: Most overdue comes back" in body
    response = client.post(f"/review/{second.slug}/rate/", {"rating": "good"})
    assert "Nothing is due." in client.get("/review/").content.decode()


def test_with_nothing_due_review_says_when_the_next_one_is(client, user):
    learning.review_rate(user=user, question=QuestionFactory(), rating=Activity.Rating.GOOD)
    client.force_login(user)
    body = client.get("/review/").content.decode()
    assert "Nothing is due." in body and "The next review is" in body


def test_another_users_reviews_are_not_mine(client, user, django_user_model):
    other = django_user_model.objects.create_user("other")
    question = QuestionFactory(title="Their question")
    learning.review_rate(user=other, question=question, rating=Activity.Rating.AGAIN)
    ReviewCard.objects.update(due=timezone.now() - timedelta(days=1))
    client.force_login(user)
    assert "Nothing is due." in client.get("/review/").content.decode()


def test_a_question_unpublished_since_leaves_the_review_queue(client, user):
    question = QuestionFactory(title="Archived later")
    learning.review_rate(user=user, question=question, rating=Activity.Rating.AGAIN)
    ReviewCard.objects.update(due=timezone.now() - timedelta(days=1))
    question.archive()
    client.force_login(user)
    assert "Nothing is due." in client.get("/review/").content.decode()


def test_each_rating_button_says_when_the_question_would_come_back(client, user):
    question = QuestionFactory(title="Intervals")
    learning.review_rate(user=user, question=question, rating=Activity.Rating.GOOD)
    ReviewCard.objects.update(due=timezone.now() - timedelta(days=1))
    client.force_login(user)
    response = client.get("/review/")
    intervals = response.context["intervals"]
    assert intervals["again"] < intervals["hard"] <= intervals["good"] < intervals["easy"]
    body = response.content.decode()
    assert 'aria-keyshortcuts="1"' in body and "<kbd>Space</kbd> shows the answer" in body
    assert body.count('<span class="interval">') == 4
