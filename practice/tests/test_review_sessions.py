"""Review sessions through the pages: decks, what remains, undo of the last rating, "hard" never
back the same day, and code questions reviewed by solving them again through the real sandbox
(graded in-process here), their rating derived from the grader."""

from datetime import timedelta

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from django.utils import timezone

from practice.models import (
    Activity,
    CodeReview,
    QuestionProgress,
    ReviewCard,
    ReviewUndo,
    Submission,
)
from practice.services import learning
from practice.tests.factories import BookmarkFactory
from quizbank.tests.factories import (
    HintFactory,
    QuestionFactory,
    QuickCheckFactory,
    TopicFactory,
)

from .test_api_submissions import RIGHT, WRONG

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
Rating = Activity.Rating


def due_card(user, question, rating=Rating.GOOD, ago=timedelta(days=3)):
    """A card the learner reviewed before, due now."""
    learning.review_rate(user=user, question=question, rating=rating)
    ReviewCard.objects.filter(user=user, question=question).update(due=timezone.now() - ago)
    return ReviewCard.objects.get(user=user, question=question)


def card_fields(card):
    card.refresh_from_db()
    return model_to_dict(card)


# -- undo ---------------------------------------------------------------------------------------


def test_undo_puts_the_card_back_exactly_and_removes_the_review_log_row(client, user):
    question = QuestionFactory(title="Strides")
    card = due_card(user, question)
    before = card_fields(card)
    progress_before = model_to_dict(QuestionProgress.objects.get(user=user, question=question))
    log_before = set(Activity.objects.filter(user=user).values_list("pk", flat=True))
    client.force_login(user)
    assert client.post(f"/review/{question.slug}/rate/", {"rating": "easy"}).status_code == 302
    assert card_fields(card) != before
    rating = Activity.objects.get(user=user, kind="rating", rating=Rating.EASY)
    body = client.get("/review/").content.decode()
    assert 'id="review-undo"' in body and "Undo “easy” on Strides" in body
    response = client.post("/review/undo/", {"rating": rating.pk})
    assert response.status_code == 302 and response["Location"] == "/review/"
    assert card_fields(card) == before
    assert set(Activity.objects.filter(user=user).values_list("pk", flat=True)) == log_before
    progress = QuestionProgress.objects.get(user=user, question=question)
    assert model_to_dict(progress) == progress_before
    assert not ReviewUndo.objects.exists()
    body = client.get("/review/").content.decode()
    assert "Undid your rating of “Strides”" in body and 'id="review-undo"' not in body
    assert "Strides" in body  # due again, so it is the card to review


def test_undo_of_a_first_review_removes_the_card_and_the_progress_it_created(client, user):
    question = QuestionFactory(title="Bookmarked only")
    BookmarkFactory(user=user, question=question)
    client.force_login(user)
    client.post(f"/review/{question.slug}/rate/", {"rating": "good", "deck": "bookmarks"})
    assert ReviewCard.objects.filter(user=user).count() == 1
    assert QuestionProgress.objects.get(user=user).state == "solved"
    rating = Activity.objects.get(user=user, kind="rating")
    response = client.post("/review/undo/", {"rating": rating.pk, "deck": "bookmarks"})
    assert response["Location"] == "/review/?deck=bookmarks"
    assert not ReviewCard.objects.exists() and not QuestionProgress.objects.exists()
    assert not Activity.objects.exists()


def test_only_the_last_rating_can_be_undone_and_only_once(client, user):
    first, second = QuestionFactory(), QuestionFactory()
    due_card(user, first)
    due_card(user, second)
    client.force_login(user)
    client.post(f"/review/{first.slug}/rate/", {"rating": "good"})
    client.post(f"/review/{second.slug}/rate/", {"rating": "again"})
    older, last = Activity.objects.filter(user=user, kind="rating").order_by("-id")[:2][::-1]
    response = client.post("/review/undo/", {"rating": older.pk})
    assert response.status_code == 409
    assert b"rating: Only your last rating in review can be undone." in response.content
    assert client.post("/review/undo/", {"rating": last.pk}).status_code == 302
    assert client.post("/review/undo/", {"rating": older.pk}).status_code == 409
    assert Activity.objects.filter(pk=older.pk).exists()


def test_undo_is_refused_once_the_card_was_reviewed_again_elsewhere(client, user):
    from quizbank.tests.factories import QuickCheckFactory

    question = QuestionFactory()
    check = QuickCheckFactory(question=question)
    due_card(user, question)
    client.force_login(user)
    client.post(f"/review/{question.slug}/rate/", {"rating": "good"})
    learning.quick_check_answer(user=user, check=check, response="surely not this")
    rating = Activity.objects.filter(user=user, kind="rating").order_by("-id").first()
    response = client.post("/review/undo/", {"rating": rating.pk})
    assert response.status_code == 409 and b"reviewed again since" in response.content
    assert ReviewCard.objects.get(user=user).last_rating == Rating.AGAIN


def test_bad_undo_and_rating_input_get_a_clear_400(client, user):
    question = QuestionFactory()
    due_card(user, question)
    client.force_login(user)
    response = client.post("/review/undo/", {"rating": "first"})
    assert response.status_code == 400 and b"rating:" in response.content
    response = client.post(f"/review/{question.slug}/rate/", {"rating": "perfect"})
    assert response.status_code == 400 and b"rating:" in response.content
    assert client.get("/review/undo/").status_code == 405


# -- permissions ----------------------------------------------------------------------------------


def test_another_learners_cards_decks_and_undo_are_never_mine(client, user, django_user_model):
    other = django_user_model.objects.create_user("other")
    theirs = QuestionFactory(title="Their card")
    code = QuestionFactory(title="Their code", kind="code")
    HintFactory(question=code)
    due_card(other, theirs, rating=Rating.AGAIN)
    BookmarkFactory(user=other, question=theirs)
    learning.review_rate(user=other, question=code, rating=Rating.AGAIN)
    CodeReview.objects.create(user=other, question=code, started_at=timezone.now())
    their_client = Client()
    their_client.force_login(other)
    their_client.post(f"/review/{theirs.slug}/rate/", {"rating": "good"})
    their_rating = Activity.objects.filter(user=other, kind="rating").order_by("-id").first()
    theirs_before = card_fields(ReviewCard.objects.get(user=other, question=theirs))

    client.force_login(user)
    for deck in ("", "?deck=bookmarks", "?deck=missed", f"?topic={theirs.primary_topic.slug}"):
        body = client.get(f"/review/{deck}").content.decode()
        assert "Their card" not in body and "Their code" not in body, deck
        assert "Undo" not in body
    assert client.post(f"/review/{theirs.slug}/rate/", {"rating": "again"}).status_code == 404
    assert client.post("/review/undo/", {"rating": their_rating.pk}).status_code == 404
    assert client.post(f"/review/{code.slug}/hint/").status_code == 404
    assert client.post(f"/review/{code.slug}/give-up/").status_code == 404
    assert card_fields(ReviewCard.objects.get(user=other, question=theirs)) == theirs_before
    assert ReviewUndo.objects.get(user=other).activity == their_rating
    assert CodeReview.objects.get(user=other).hints_used == 0
    assert not ReviewCard.objects.filter(user=user).exists()


def test_review_actions_ask_anonymous_visitors_to_sign_in(client):
    question = QuestionFactory()
    for url in (
        "/review/undo/",
        f"/review/{question.slug}/rate/",
        f"/review/{question.slug}/hint/",
    ):
        assert client.post(url)["Location"].startswith("/accounts/login/")


# -- decks and what remains ---------------------------------------------------------------------


def test_a_topic_deck_holds_the_due_cards_of_that_topic(client, user):
    autograd = TopicFactory(slug="autograd", name="Autograd")
    in_topic = QuestionFactory(title="Leaf tensors", primary_topic=autograd)
    tagged = QuestionFactory(title="Tagged too", topics=[autograd])
    elsewhere = QuestionFactory(title="Elsewhere")
    for question in (in_topic, tagged, elsewhere):
        due_card(user, question)
    client.force_login(user)
    response = client.get("/review/?deck=topic&topic=autograd")
    body = response.content.decode()
    assert "<strong>2</strong> questions to go in “Autograd”" in body
    assert response.context["question"] in (in_topic, tagged)
    assert client.get("/review/?topic=autograd").context["remaining"] == 2
    assert (
        "<strong>3</strong> questions to go in “All due”" in client.get("/review/").content.decode()
    )
    # Rating in the deck comes back to the deck, one fewer to go.
    first = response.context["question"]
    response = client.post(
        f"/review/{first.slug}/rate/", {"rating": "good", "deck": "topic", "topic": "autograd"}
    )
    assert response["Location"] == "/review/?deck=topic&topic=autograd"
    assert client.get(response["Location"]).context["remaining"] == 1


def test_the_bookmarks_deck_holds_due_bookmarks_and_new_ones(client, user):
    due = QuestionFactory(title="Due and bookmarked")
    new = QuestionFactory(title="Bookmarked, never reviewed")
    later = QuestionFactory(title="Bookmarked, not due")
    due_card(user, due)
    learning.review_rate(user=user, question=later, rating=Rating.EASY)
    for question in (due, new, later):
        BookmarkFactory(user=user, question=question)
    due_card(user, QuestionFactory(title="Due, not bookmarked"))
    client.force_login(user)
    response = client.get("/review/?deck=bookmarks")
    assert response.context["remaining"] == 2
    assert response.context["question"] == due  # due cards first, then new ones
    client.post(f"/review/{due.slug}/rate/", {"rating": "good", "deck": "bookmarks"})
    response = client.get("/review/?deck=bookmarks")
    assert response.context["question"] == new and response.context["new"]
    assert "New card" in response.content.decode()
    client.post(f"/review/{new.slug}/rate/", {"rating": "good", "deck": "bookmarks"})
    assert ReviewCard.objects.filter(user=user, question=new).exists()
    body = client.get("/review/?deck=bookmarks").content.decode()
    assert "Nothing is due in this deck." in body


def test_the_missed_deck_holds_what_you_got_wrong_until_you_review_it_well(client, user):
    forgot = QuestionFactory(title="Forgot it")
    recalled = QuestionFactory(title="Recalled it")
    learning.review_rate(user=user, question=forgot, rating=Rating.AGAIN)
    due_card(user, recalled, rating=Rating.GOOD)
    client.force_login(user)
    # Not due yet (FSRS's first learning step), but missed: the deck offers it now.
    assert ReviewCard.objects.get(question=forgot).due > timezone.now()
    response = client.get("/review/?deck=missed")
    assert response.context["remaining"] == 1 and response.context["question"] == forgot
    assert client.get("/review/").context["question"] == recalled
    client.post(f"/review/{forgot.slug}/rate/", {"rating": "good", "deck": "missed"})
    body = client.get("/review/?deck=missed").content.decode()
    assert "Nothing missed." in body


def test_an_unknown_deck_or_topic_is_a_400_naming_the_field(client, user):
    client.force_login(user)
    response = client.get("/review/?deck=everything")
    assert response.status_code == 400
    assert "deck: No deck &#x27;everything&#x27;" in response.content.decode()
    response = client.get("/review/?deck=topic&topic=nope")
    assert response.status_code == 400 and "topic: No topic &#x27;nope&#x27;." in (
        response.content.decode()
    )
    # The deck choices stay usable.
    assert 'aria-label="Decks"' in response.content.decode()


def test_the_page_counts_what_remains_and_what_was_reviewed_today(client, user):
    for _ in range(3):
        due_card(user, QuestionFactory())  # rated today on the questions' pages: not reviews
    client.force_login(user)
    body = client.get("/review/").content.decode()
    assert "<strong>3</strong> questions to go" in body and "0 reviewed today" in body
    first = client.get("/review/").context["question"]
    client.post(f"/review/{first.slug}/rate/", {"rating": "good"})
    body = client.get("/review/").content.decode()
    assert "<strong>2</strong> questions to go" in body and "1 reviewed today" in body
    assert 'All due <span class="deck-count">2</span>' in body


def test_reviewed_today_leaves_out_page_ratings_and_wrong_quick_checks(client, user):
    question = QuestionFactory()
    due_card(user, question)
    client.force_login(user)
    client.post(f"/review/{question.slug}/rate/", {"rating": "good"})
    other = QuestionFactory()
    client.post(f"/questions/{other.slug}/rate/", {"rating": "again"})
    learning.quick_check_answer(
        user=user, check=QuickCheckFactory(question=other, answer=1), response=0
    )
    assert "1 reviewed today" in client.get("/review/").content.decode()


# -- hard ---------------------------------------------------------------------------------------


def test_hard_never_comes_back_the_same_day(client, user):
    question = QuestionFactory()
    learning.review_rate(user=user, question=question, rating=Rating.AGAIN)
    ReviewCard.objects.update(due=timezone.now())
    client.force_login(user)
    response = client.get("/review/")
    # The button says so too: at least until midnight.
    tomorrow = timezone.make_aware(
        timezone.datetime.combine(
            timezone.localdate() + timedelta(days=1), timezone.datetime.min.time()
        )
    )
    assert response.context["intervals"]["hard"] >= tomorrow - timezone.now() - timedelta(seconds=5)
    client.post(f"/review/{question.slug}/rate/", {"rating": "hard"})
    card = ReviewCard.objects.get(user=user)
    assert card.last_rating == Rating.HARD and card.due >= tomorrow
    # FSRS alone would have brought it back within minutes (a learning step).
    assert card.state == ReviewCard.State.LEARNING


# -- code questions -----------------------------------------------------------------------------


def submit(client, code, capture, **extra):
    with capture(execute=True):
        return client.post(
            "/questions/double-it/submissions/", {"code": code, "review": "1"}, **HTMX, **extra
        )


def verdict(client, response):
    """The verdict partial once graded (the POST's own answer was rendered before the commit)."""
    submission = Submission.objects.filter(mode="submit").first()
    return client.get(f"/submissions/{submission.pk}/?review=1", **HTMX).content.decode()


@pytest.fixture
def code_card(user, exercise):
    """double-it, solved once with different code, now due for review."""
    Submission.objects.create(
        user=user, question=exercise.question, code="# my old code\n" + RIGHT, status="passed"
    )
    return due_card(user, exercise.question)


def test_a_code_card_opens_a_fresh_editor_with_the_old_code_behind_a_control(
    client, user, code_card
):
    client.force_login(user)
    body = client.get("/review/").content.decode()
    editor = body[body.index('<textarea id="code"') : body.index("</textarea>")]
    assert "raise NotImplementedError" in editor and "my old code" not in editor
    assert f'data-draft-key="quizbank:review:u{user.pk}:{CodeReview.objects.get().pk}"' in editor
    hidden = body[body.index('<details class="last-code">') :]
    assert "<summary>Show my last code</summary>" in hidden and "my old code" in hidden
    assert body.count("my old code") == 1
    assert 'id="give-up"' in body and 'id="rate-good"' not in body
    assert "SECRET_INPUT" not in body
    # A code card is rated by the grader, not by hand.
    response = client.post("/review/double-it/rate/", {"rating": "easy"})
    assert response.status_code == 400


def test_a_first_try_pass_with_no_hint_rates_good(
    client, user, code_card, eager, django_capture_on_commit_callbacks
):
    before = card_fields(code_card)
    client.force_login(user)
    client.get("/review/")
    response = submit(client, RIGHT, django_capture_on_commit_callbacks)
    body = verdict(client, response)
    assert "✓ Passed" in body and "Review rated “good”" in body and 'id="review-next"' in body
    # The page around the editor catches up in place: no give-up, the new count and undo.
    assert '<div id="give-up-form" hx-swap-oob="true"></div>' in body
    assert "<strong>0</strong> questions to go" in body
    assert 'All due <span class="deck-count">0</span>' in body
    assert "Undo “good” on" in body and 'id="review-undo-form" hx-swap-oob="true"' in body
    card = ReviewCard.objects.get(user=user)
    assert card.last_rating == Rating.GOOD and card.reviews == before["reviews"] + 1
    assert card.due > timezone.now() + timedelta(days=1)
    review = CodeReview.objects.get()
    assert review.rating == Rating.GOOD and review.submission.status == "passed"
    assert Activity.objects.filter(user=user, kind="rating").latest("id").rating == Rating.GOOD
    # The review is over: the next card (none here) comes up, with the undo.
    body = client.get("/review/").content.decode()
    assert "Nothing is due." in body and "Undo “good” on" in body


def test_a_pass_after_a_failed_submission_rates_hard_and_not_again_today(
    client, user, code_card, eager, django_capture_on_commit_callbacks
):
    client.force_login(user)
    client.get("/review/")
    response = submit(client, WRONG, django_capture_on_commit_callbacks)
    body = verdict(client, response)
    assert "✗ Failed" in body and "Not passed yet" in body
    # A failure alone does not rate the review: the card is still due, the review open.
    assert ReviewCard.objects.get(user=user).reviews == code_card.reviews
    assert CodeReview.objects.get().retries == 1
    assert 'id="review-code-tally" hx-swap-oob="true">In this review so far: 1 failed' in body
    assert "so far: 1 failed submission." in client.get("/review/").content.decode()
    response = submit(client, RIGHT, django_capture_on_commit_callbacks)
    assert "Review rated “hard”" in verdict(client, response)
    card = ReviewCard.objects.get(user=user)
    assert card.last_rating == Rating.HARD
    assert timezone.localtime(card.due).date() > timezone.localdate()


def test_a_pass_after_a_hint_rates_hard_and_example_runs_are_free(
    client, user, code_card, eager, django_capture_on_commit_callbacks
):
    HintFactory(question=code_card.question, text="Multiply, do not add.")
    client.force_login(user)
    client.get("/review/")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/questions/double-it/submissions/",
            {"code": WRONG, "review": "1", "mode": "examples"},
            **HTMX,
        )
    assert CodeReview.objects.get().retries == 0
    body = client.post("/review/double-it/hint/", **HTMX).content.decode()
    assert "Multiply, do not add." in body and "1 of 1 taken in this review" in body
    assert client.post("/review/double-it/hint/").status_code == 400  # no more hints
    submit(client, RIGHT, django_capture_on_commit_callbacks)
    assert ReviewCard.objects.get(user=user).last_rating == Rating.HARD
    assert CodeReview.objects.get().hints_used == 1


def test_giving_up_rates_again_and_undo_brings_the_card_back_for_a_fresh_review(
    client, user, code_card, eager, django_capture_on_commit_callbacks
):
    before = card_fields(code_card)
    client.force_login(user)
    client.get("/review/")
    submit(client, WRONG, django_capture_on_commit_callbacks)
    response = client.post("/review/double-it/give-up/")
    assert response.status_code == 302
    card = ReviewCard.objects.get(user=user)
    assert card.last_rating == Rating.AGAIN and card.reviews == before["reviews"] + 1
    assert CodeReview.objects.get().gave_up
    assert client.post("/review/double-it/give-up/").status_code == 404  # it is over
    rating = Activity.objects.filter(user=user, kind="rating").latest("id")
    assert rating.rating == Rating.AGAIN
    client.post("/review/undo/", {"rating": rating.pk})
    assert card_fields(card) == before
    assert not CodeReview.objects.exists()
    # The failed submission stays in the learner's history; the review starts afresh.
    assert Submission.objects.filter(status="failed").exists()
    client.get("/review/")
    assert CodeReview.objects.get().retries == 0


def test_a_review_graded_through_the_api_updates_the_fsrs_card(
    api, client, user, code_card, eager, django_capture_on_commit_callbacks
):
    before = card_fields(code_card)
    client.force_login(user)
    client.get("/review/")  # opens the review
    api.force_authenticate(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/submissions/", {"question": "double-it", "code": RIGHT}, format="json"
        )
    assert response.status_code == 201
    assert api.get(f"/api/submissions/{response.json()['id']}/").json()["status"] == "passed"
    card = card_fields(code_card)
    assert card["reviews"] == before["reviews"] + 1 and card["last_rating"] == Rating.GOOD
    assert card["last_review"] > before["last_review"] and card["due"] > before["due"]


def test_without_javascript_a_review_submission_comes_back_to_the_review(
    client, user, code_card, eager, django_capture_on_commit_callbacks
):
    BookmarkFactory(user=user, question=code_card.question)
    client.force_login(user)
    client.get("/review/?deck=bookmarks")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/questions/double-it/submissions/", {"code": RIGHT, "review": "1"})
    assert response["Location"] == "/review/?deck=bookmarks"
    body = client.get(response["Location"]).content.decode()
    assert "went to the grader; its verdict rates this review." in body
    assert ReviewCard.objects.get(user=user).last_rating == Rating.GOOD
