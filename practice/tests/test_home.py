import re
from datetime import timedelta

import pytest
from django.utils import timezone

from practice.models import Activity, ReviewCard
from practice.services import learning
from practice.tests.factories import ReviewCardFactory
from quizbank.tests.factories import QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def topics(db):
    return TopicFactory(slug="basics", order=1), TopicFactory(slug="training", order=2)


def test_a_visitor_is_invited_to_start_with_the_easiest_first_question(client, topics):
    basics, training = topics
    QuestionFactory(primary_topic=training, title="Easy but later", difficulty="easy")
    QuestionFactory(primary_topic=basics, title="Medium first topic", difficulty="medium")
    QuestionFactory(primary_topic=basics, title="Easy first topic", difficulty="easy")
    body = client.get("/").content.decode()
    assert "Start with “Easy first topic”" in body and "Sign up" in body


def test_a_learner_sees_reviews_due_the_question_in_progress_and_a_suggestion(client, user, topics):
    basics, training = topics
    due = QuestionFactory(primary_topic=basics, title="Due for review")
    started = QuestionFactory(primary_topic=training, title="Half done")
    QuestionFactory(primary_topic=basics, title="Untouched basics")
    QuestionFactory(primary_topic=training, title="Untouched training")
    learning.review_rate(user=user, question=due, rating=Activity.Rating.AGAIN)
    ReviewCard.objects.update(due=timezone.now() - timedelta(hours=1))
    learning.answer_reveal(user=user, question=started)
    client.force_login(user)
    response = client.get("/")
    body = response.content.decode()
    assert response.context["due_count"] == 1 and "Due for review" in body
    assert response.context["in_progress"].title == "Half done"
    # The suggestion stays in the topic the learner was last working in.
    assert response.context["suggested"].title == "Untouched training"
    assert response.context["today"] == 2 and response.context["streak"] == 1
    assert '2 <span class="muted small">of 5 questions' in body


@pytest.mark.parametrize(
    ("due_in", "wording"),
    [
        (timedelta(seconds=20), "Next review in under a minute."),
        (timedelta(hours=3, minutes=5, seconds=30), "Next review in 3\xa0hours, 5\xa0minutes."),
    ],
)
def test_the_next_review_is_said_in_words_never_in_0_minutes(client, user, due_in, wording):
    ReviewCardFactory(user=user, due=timezone.now() + due_in)
    client.force_login(user)
    page = client.get("/").content.decode()
    assert re.sub(r"<[^>]+>", "", page).count(wording) == 1
    assert "0\xa0minutes" not in page
