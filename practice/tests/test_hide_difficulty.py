import pytest
from django.utils import timezone

from accounts.models import Profile
from practice.models import Activity, ReviewCard
from practice.services import interviews, learning
from quizbank.tests.factories import QuestionFactory

pytestmark = pytest.mark.django_db

BADGE = '<span class="badge hard">Hard</span>'


@pytest.fixture
def question(db):
    return QuestionFactory(slug="hard-one", title="A hard one", difficulty="hard")


def pages(client, user, question):
    learning.review_rate(user=user, question=question, rating=Activity.Rating.AGAIN)
    learning.answer_reveal(user=user, question=question)
    ReviewCard.objects.update(due=timezone.now())
    return {
        "list": client.get("/questions/").content.decode(),
        "question": client.get("/questions/hard-one/").content.decode(),
        "review": client.get("/review/").content.decode(),
        "home": client.get("/").content.decode(),
    }


def test_the_profile_option_hides_difficulty_on_every_learner_page(client, user, question):
    client.force_login(user)
    response = client.post(
        "/accounts/profile/",
        {"display_name": "", "daily_goal": "5", "email": "", "hide_difficulty": "on"},
    )
    assert response.status_code == 302 and Profile.objects.get(user=user).hide_difficulty
    for name, body in pages(client, user, question).items():
        assert BADGE not in body, name
        assert "A hard one" in body, name
    assert 'name="difficulty"' not in client.get("/questions/").content.decode()


def test_a_hidden_difficulty_in_the_address_is_left_out_and_said(client, user, question):
    QuestionFactory(slug="easy-one", title="An easy one", difficulty="easy")
    Profile.objects.update_or_create(user=user, defaults={"hide_difficulty": True})
    client.force_login(user)
    body = client.get("/questions/?difficulty=easy").content.decode()
    assert "A hard one" in body and "An easy one" in body
    assert "filters by difficulty, which you chose to hide" in body
    assert "filters by difficulty" not in client.get("/questions/").content.decode()
    # "Next question" does not follow the hidden filter either.
    page = client.get("/questions/easy-one/?difficulty=easy").content.decode()
    assert "difficulty=easy" not in page


def test_difficulty_shows_by_default(client, user, question):
    client.force_login(user)
    shown = pages(client, user, question)
    assert all(BADGE in shown[name] for name in ("list", "question", "review"))
    assert 'name="difficulty"' in client.get("/questions/").content.decode()


def test_interviews_never_show_difficulty(client, user, question):
    client.force_login(user)
    interview = interviews.interview_create(
        user=user, topics=[], difficulty=[], questions=1, minutes=10
    )
    body = client.get(f"/interviews/{interview.pk}/").content.decode()
    assert "A hard one" in body and "Hard" not in body
