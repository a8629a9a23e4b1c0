"""The question page and its actions, through the test client: what anonymous visitors may do
without being recorded, what a learner's actions record, and that nobody sees another's notes."""

import re

import pytest
from django.utils import timezone

from practice.models import Activity, Bookmark, Note, QuestionProgress, ReviewCard
from quizbank.tests.factories import HintFactory, QuestionFactory, QuickCheckFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def question(db):
    question = QuestionFactory(slug="zero-grad", prompt="Why call `zero_grad`?")
    for order in (1, 2, 3):
        HintFactory(question=question, order=order, text=f"Hint text number {order}.")
    return question


@pytest.fixture
def check(question):
    return QuickCheckFactory(question=question, order=1)


def test_the_page_shows_prompt_why_concepts_and_no_hint_or_answer_yet(client, question):
    body = client.get("/questions/zero-grad/").content.decode()
    assert "<code>zero_grad</code>" in body
    assert "Why interviewers ask this" in body and "It shows understanding." in body
    assert "Concepts tested" in body and "autograd" in body
    assert "Hint text number 1" not in body and "The idea, explained." not in body
    assert "Reveal hint 1" in body and "Show the answer" in body


def test_hints_reveal_one_at_a_time_for_a_visitor_without_recording(client, question):
    response = client.post("/questions/zero-grad/hints/2/", **HTMX)
    body = response.content.decode()
    assert "Hint text number 1" in body and "Hint text number 2" in body
    assert "Hint text number 3" not in body and "Reveal hint 3" in body
    assert not Activity.objects.exists()


def test_without_javascript_a_hint_reveal_comes_back_to_the_page(client, question):
    response = client.post("/questions/zero-grad/hints/1/")
    assert response["Location"] == "/questions/zero-grad/?hints=1#hint-1"
    assert "Hint text number 1" in client.get(response["Location"]).content.decode()


def test_a_learners_hints_are_recorded_once_and_stay_revealed(client, user, question):
    client.force_login(user)
    client.post("/questions/zero-grad/hints/1/", **HTMX)
    client.post("/questions/zero-grad/hints/1/", **HTMX)
    client.post("/questions/zero-grad/hints/2/", **HTMX)
    assert list(Activity.objects.values_list("kind", "hint_order")) == [("hint", 2), ("hint", 1)]
    assert QuestionProgress.objects.get(user=user).hints_revealed == 2
    assert "Hint text number 2" in client.get("/questions/zero-grad/").content.decode()


def test_a_hint_that_does_not_exist_is_404(client, question):
    assert client.post("/questions/zero-grad/hints/4/").status_code == 404
    assert client.post("/questions/zero-grad/hints/0/").status_code == 404


def test_the_answer_reveals_on_demand_and_asks_a_learner_to_rate(client, user, question):
    client.force_login(user)
    body = client.post("/questions/zero-grad/answer/", **HTMX).content.decode()
    assert "The idea, explained." in body and "How well did you know it?" in body
    assert Activity.objects.get().kind == "answer"
    assert QuestionProgress.objects.get(user=user).answer_revealed


def test_the_rating_buttons_say_when_the_question_comes_back(client, user, question):
    client.force_login(user)
    revealed = client.post("/questions/zero-grad/answer/", **HTMX).content.decode()
    for body in (
        revealed,
        client.get("/questions/zero-grad/").content.decode(),
        client.post("/questions/zero-grad/rate/", {"rating": "good"}, **HTMX).content.decode(),
    ):
        buttons = re.findall(r'<button type="submit" name="rating".*?</button>', body, re.S)
        assert len(buttons) == 4
        assert all('<span class="interval">' in b for b in buttons)
    # A new card rated "hard" waits for midnight (never the same day): it says so, not "7 h".
    hard = re.search(r'id="rate-hard".*?</button>', revealed, re.S).group(0)
    now = timezone.localtime()
    if now.hour < 23 or now.minute < 50:  # near midnight a learning step may end after it
        assert '<span class="interval">tomorrow</span>' in hard


def test_a_visitor_sees_the_answer_and_is_asked_to_sign_in_to_rate(client, question):
    body = client.post("/questions/zero-grad/answer/", **HTMX).content.decode()
    assert "The idea, explained." in body and "Sign in</a> to rate" in body
    assert not Activity.objects.exists()


def test_a_quick_check_is_graded_with_its_explanation(client, question, check):
    body = client.post(f"/questions/zero-grad/checks/{check.pk}/", {"choice": "1"}, **HTMX)
    assert "✓ Right." in body.content.decode() and "Because that." in body.content.decode()
    body = client.post(
        f"/questions/zero-grad/checks/{check.pk}/", {"choice": "0", "attempt": "2"}, **HTMX
    )
    assert (
        "✗ Not quite." in body.content.decode()
        and "<strong>B</strong> that" in body.content.decode()
    )
    assert not Activity.objects.exists()


def test_a_wrong_first_answer_gets_one_retry_and_only_the_first_attempt_is_recorded(
    client, user, question, check
):
    client.force_login(user)
    url = f"/questions/zero-grad/checks/{check.pk}/"
    first = client.post(url, {"choice": "0", "attempt": "1"}, **HTMX).content.decode()
    assert "Not quite. Change your answer" in first and "Try again" in first
    assert "Because that." not in first and "<strong>B</strong>" not in first  # answer hidden
    oob = f'name="attempt" id="check-{check.pk}-attempt" value="2" hx-swap-oob="true"'
    assert oob in first
    second = client.post(url, {"choice": "1", "attempt": "2"}, **HTMX).content.decode()
    assert "✓ Right." in second and "Because that." in second
    (activity,) = Activity.objects.filter(kind="quick_check")
    assert activity.correct is False  # the first attempt is what progress records


def test_show_answer_reveals_it_without_grading(client, question, check):
    url = f"/questions/zero-grad/checks/{check.pk}/"
    body = client.post(url, {"reveal": "1"}, **HTMX).content.decode()
    assert "The answer." in body and "<strong>B</strong> that" in body


def test_a_quick_check_without_an_answer_asks_for_one(client, question, check):
    body = client.post(f"/questions/zero-grad/checks/{check.pk}/", {}, **HTMX).content.decode()
    assert "Choose an answer first." in body


def test_a_quick_check_works_without_javascript_too(client, question, check):
    # Redirect after post: the result shows on the question's own address, once.
    response = client.post(f"/questions/zero-grad/checks/{check.pk}/", {"choice": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"/questions/zero-grad/#check-{check.pk}"
    assert "✓ Right." in client.get("/questions/zero-grad/").content.decode()
    assert "✓ Right." not in client.get("/questions/zero-grad/").content.decode()


def test_a_multiple_choice_and_a_predict_check_are_graded(client, question):
    multiple = QuickCheckFactory(question=question, order=2, kind="multiple", answer=[0, 2])
    predict = QuickCheckFactory(question=question, order=3, kind="predict", choices=[], answer="3")
    url = "/questions/zero-grad/checks/{}/"
    assert (
        "✓" in client.post(url.format(multiple.pk), {"choice": ["2", "0"]}, **HTMX).content.decode()
    )
    assert "✗" in client.post(url.format(multiple.pk), {"choice": ["0"]}, **HTMX).content.decode()
    assert "✓" in client.post(url.format(predict.pk), {"text": " 3 "}, **HTMX).content.decode()


def test_a_learners_wrong_quick_check_is_recorded_and_comes_back_for_review(
    client, user, question, check
):
    client.force_login(user)
    client.post(f"/questions/zero-grad/checks/{check.pk}/", {"choice": "0"}, **HTMX)
    activity = Activity.objects.get()
    assert (activity.kind, activity.correct, activity.quick_check_id) == (
        "quick_check",
        False,
        check.pk,
    )
    card = ReviewCard.objects.get(user=user, question=question)
    assert card.last_rating == Activity.Rating.AGAIN and card.reviews == 1


def test_a_check_of_a_draft_question_is_404_for_learners(client):
    draft = QuestionFactory(slug="draft", status="draft")
    check = QuickCheckFactory(question=draft)
    assert client.post(f"/questions/draft/checks/{check.pk}/", {"choice": "1"}).status_code == 404


def test_rating_schedules_the_next_review_and_solves_a_concept_question(client, user, question):
    client.force_login(user)
    body = client.post("/questions/zero-grad/rate/", {"rating": "good"}, **HTMX).content.decode()
    assert "Rated “good”. Next review" in body
    card = ReviewCard.objects.get(user=user, question=question)
    assert card.reviews == 1 and card.last_rating == Activity.Rating.GOOD
    assert QuestionProgress.objects.get(user=user).state == "solved"


def test_a_rating_that_is_not_one_of_the_four_is_400(client, user, question):
    client.force_login(user)
    assert client.post("/questions/zero-grad/rate/", {"rating": "meh"}).status_code == 400
    assert not ReviewCard.objects.exists()


def test_saving_progress_asks_a_visitor_to_sign_in_and_come_back(client, question):
    response = client.post("/questions/zero-grad/bookmark/", **HTMX)
    assert response["HX-Redirect"] == "/accounts/login/?next=%2Fquestions%2Fzero-grad%2F"
    response = client.post("/questions/zero-grad/rate/", {"rating": "good"})
    assert response["Location"] == "/accounts/login/?next=%2Fquestions%2Fzero-grad%2F"
    response = client.post("/questions/zero-grad/note/", {"text": "mine"})
    assert response["Location"] == "/accounts/login/?next=%2Fquestions%2Fzero-grad%2F%23note"
    assert not Bookmark.objects.exists() and not Note.objects.exists()


def test_a_bookmark_toggles(client, user, question):
    client.force_login(user)
    body = client.post("/questions/zero-grad/bookmark/", **HTMX).content.decode()
    assert 'aria-pressed="true"' in body and Bookmark.objects.filter(user=user).exists()
    body = client.post("/questions/zero-grad/bookmark/", **HTMX).content.decode()
    assert 'aria-pressed="false"' in body and not Bookmark.objects.exists()


def test_a_note_is_saved_shown_to_its_author_only_and_deleted_when_emptied(
    client, user, django_user_model, question
):
    client.force_login(user)
    body = client.post("/questions/zero-grad/note/", {"text": "Mine alone."}, **HTMX)
    assert "Saved." in body.content.decode()
    assert "Mine alone." in client.get("/questions/zero-grad/").content.decode()
    other = django_user_model.objects.create_user("other", password="x-long-password-1")
    client.force_login(other)
    assert "Mine alone." not in client.get("/questions/zero-grad/").content.decode()
    client.post("/questions/zero-grad/note/", {"text": "Theirs."}, **HTMX)
    assert Note.objects.get(user=user).text == "Mine alone."
    client.force_login(user)
    client.post("/questions/zero-grad/note/", {"text": "  "}, **HTMX)
    assert list(Note.objects.values_list("text", flat=True)) == ["Theirs."]


def test_a_note_over_the_limit_is_refused_and_what_was_typed_is_kept(client, user, question):
    client.force_login(user)
    body = client.post(
        "/questions/zero-grad/note/", {"text": "x" * 10_001}, **HTMX
    ).content.decode()
    assert "at most 10000 characters" in body and "x" * 10_001 in body
    assert not Note.objects.exists()


def test_actions_need_a_post(client, user, question):
    client.force_login(user)
    for action in ("hints/1/", "answer/", "rate/", "bookmark/", "note/", "submissions/"):
        assert client.get(f"/questions/zero-grad/{action}").status_code == 405


def test_the_quick_check_api_records_a_learners_answer_but_not_a_visitors(api, user, check):
    url = f"/api/quick-checks/{check.pk}/answer/"
    assert api.post(url, {"answer": 0}, format="json").json()["correct"] is False
    assert not Activity.objects.exists()
    api.force_authenticate(user)
    assert api.post(url, {"answer": 1}, format="json").json()["correct"] is True
    assert Activity.objects.get().correct is True
