"""A review session driven by the keyboard in a real browser: concept cards rated with Space and
1-4, a rating undone with U, and a code card solved again in a fresh editor and graded through the
real sandbox (in-process), its rating the grader's. With SCREENSHOT_DIR set, it also saves the
review page on a desktop (1280 px) and a phone (390 px), light and dark."""

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone
from playwright.sync_api import expect

from practice.models import Activity, ReviewCard, Submission
from practice.services import learning
from practice.tests.conftest import DOUBLE_CHECKS
from practice.tests.test_api_submissions import RIGHT
from quizbank.tests.factories import ExerciseFactory, HintFactory, QuestionFactory, TopicFactory

from .browser import needs_browser
from .test_learner_journey import GRADING, PASSWORD, replace_code

pytestmark = needs_browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def learner(transactional_db, django_user_model):
    return django_user_model.objects.create_user("ada", password=PASSWORD)


def shots(page, name):
    """The page on a desktop and a phone, light and dark, when SCREENSHOT_DIR is set."""
    target = os.environ.get("SCREENSHOT_DIR")
    if not target:
        return
    Path(target).mkdir(parents=True, exist_ok=True)
    for size, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=f"{target}/{name}-{size}-{scheme}.png", full_page=True)
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme="light")


def test_a_review_session_by_keyboard_with_an_undo_and_a_code_question_solved_again(
    page, learner, eager
):
    topic = TopicFactory(slug="tensors", name="Tensors", order=1)
    first = QuestionFactory(slug="views", title="Views and copies", primary_topic=topic)
    second = QuestionFactory(slug="strides", title="Strides", primary_topic=topic)
    code = QuestionFactory(
        slug="double-it", title="Double a tensor", kind="code", primary_topic=topic
    )
    ExerciseFactory(question=code, checks=DOUBLE_CHECKS, time_limit=10)
    HintFactory(question=code, text="Multiply by two.")
    Submission.objects.create(
        user=learner, question=code, code="# my old code\n" + RIGHT, status="passed"
    )
    for minutes, question in ((30, first), (20, second), (10, code)):
        learning.review_rate(user=learner, question=question, rating=Activity.Rating.GOOD)
        ReviewCard.objects.filter(question=question).update(
            due=timezone.now() - timedelta(minutes=minutes)
        )
    first_card = ReviewCard.objects.get(question=first)
    before = model_to_dict(first_card)

    page.goto("/accounts/login/?next=/review/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    count = page.locator(".review-count")
    expect(count).to_contain_text("3 questions to go in “All due”")
    expect(page.get_by_role("heading", level=2)).to_have_text("Views and copies")
    page.keyboard.press("Space")
    expect(page.locator("details#answer")).to_have_attribute("open", "")
    # "hard" waits at least for midnight: "tomorrow" unless FSRS gives a longer wait.
    expect(page.locator("#rate-hard .interval")).to_have_text(re.compile(r"\d+ (min|h|d)|tomorrow"))
    shots(page, "review-concept")
    page.keyboard.press("3")
    expect(count).to_contain_text("2 questions to go")
    expect(
        page.get_by_role("button", name=re.compile("Undo “good” on Views and copies"))
    ).to_be_visible()

    # U takes the rating back: the card is exactly as it was, and comes up again.
    page.keyboard.press("u")
    expect(page.locator("main")).to_contain_text("Undid your rating of “Views and copies”")
    expect(count).to_contain_text("3 questions to go")
    first_card.refresh_from_db()
    assert model_to_dict(first_card) == before

    page.keyboard.press("Space")
    page.keyboard.press("3")
    expect(page.get_by_role("heading", level=2)).to_have_text("Strides")
    page.keyboard.press("Space")
    page.keyboard.press("4")

    # The code card: a fresh editor with the starter code; the old code only on request.
    expect(page.get_by_role("heading", level=2)).to_have_text("Double a tensor")
    expect(count).to_contain_text("1 question to go")
    expect(page.locator(".cm-content")).to_contain_text("raise NotImplementedError")
    expect(page.locator(".cm-content")).not_to_contain_text("my old code")
    old = page.locator("#last-code")
    expect(old).to_be_hidden()
    page.get_by_text("Show my last code").click()
    expect(old).to_be_visible()
    expect(old).to_contain_text("my old code")
    page.get_by_text("Show my last code").click()
    shots(page, "review-code")
    replace_code(page, RIGHT)
    page.keyboard.press("Control+Shift+Enter")
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("✓ Passed", timeout=GRADING)
    expect(verdict).to_contain_text("Review rated “good”")
    next_card = page.locator("#review-next")
    expect(next_card).to_be_focused()
    shots(page, "review-code-passed")
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_contain_text("Nothing is due.")
    card = ReviewCard.objects.get(question=code)
    assert card.last_rating == Activity.Rating.GOOD and card.due > timezone.now()
    ratings = list(
        Activity.objects.filter(
            user=learner, kind="rating", created_at__gt=timezone.now() - timedelta(minutes=5)
        )
        .order_by("id")
        .values_list("question__slug", "rating")
    )
    # The three set-up ratings, then views (good), strides (easy), double-it (good, the grader's).
    assert ratings[3:] == [("views", 3), ("strides", 4), ("double-it", 3)]
    shots(page, "review-done")


def test_the_rating_bar_stays_in_view_below_a_long_answer(page, learner):
    long_answer = "\n\n".join(f"Paragraph {i} of a long worked answer." for i in range(80))
    question = QuestionFactory(slug="long", title="A long answer", answer=long_answer)
    learning.review_rate(user=learner, question=question, rating=Activity.Rating.AGAIN)
    ReviewCard.objects.filter(question=question).update(due=timezone.now() - timedelta(hours=1))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/accounts/login/?next=/review/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="A long answer")).to_be_visible()
    page.wait_for_load_state("load")  # site.js (deferred) holds the keys
    page.keyboard.press("Space")
    expect(page.get_by_text("Paragraph 0 of a long worked answer.")).to_be_visible()
    good = page.get_by_role("button", name=re.compile("Good"))
    last = page.get_by_text("Paragraph 79 of a long worked answer.")
    assert not last.is_visible() or last.bounding_box()["y"] > 800  # far below the fold
    box = good.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800
    target = os.environ.get("SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{target}/review-rating-bar-pinned.png")
    # At the end of the answer the bar sits where it belongs, under the last paragraph.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    last_box = last.bounding_box()
    box = good.bounding_box()
    assert last_box is not None and box is not None and box["y"] > last_box["y"]
    good.click()
    expect(page.get_by_text("1 reviewed today")).to_be_visible()
