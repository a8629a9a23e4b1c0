"""A learner's first session, in a real browser against the live server, with grading in-process
through the real sandbox (Celery eager)."""

import os
import re

import pytest
from playwright.sync_api import expect

from practice.models import Submission
from practice.tests.conftest import DOUBLE_CHECKS
from practice.tests.test_api_submissions import RIGHT, WRONG
from quizbank.tests.factories import (
    ExerciseFactory,
    HintFactory,
    QuestionFactory,
    QuickCheckFactory,
    TopicFactory,
)

from .browser import needs_browser

pytestmark = needs_browser

PASSWORD = "a-long-and-unusual-passphrase"
GRADING = 90_000  # ms: the first submission starts the sandbox pool


@pytest.fixture
def bank(transactional_db):
    tensors = TopicFactory(slug="tensors", name="Tensors", order=1)
    autograd = TopicFactory(slug="autograd", name="Autograd", order=2)
    question = QuestionFactory(
        slug="double-it",
        title="Double a tensor",
        primary_topic=tensors,
        kind="code",
        prompt="Write `double(x)` that returns a tensor twice `x`, keeping its dtype.",
        why_asked="It checks that you know how arithmetic broadcasts over a tensor.",
    )
    HintFactory(question=question, order=1, text="Multiplying by a Python number broadcasts.")
    HintFactory(question=question, order=2, text="`x * 2` keeps the dtype of `x`.")
    QuickCheckFactory(
        question=question,
        order=1,
        prompt="What does `torch.ones(2) * 2` hold?",
        choices=["`tensor([1., 1.])`", "`tensor([2., 2.])`", "`tensor([2, 2])`"],
        answer=1,
        explanation="Each element is multiplied; the float dtype stays.",
    )
    ExerciseFactory(question=question, checks=DOUBLE_CHECKS, time_limit=10)
    QuestionFactory(
        slug="strides", title="Strides and views", primary_topic=tensors, difficulty="hard"
    )
    QuestionFactory(slug="graph", title="What autograd records", primary_topic=autograd)
    return question


def replace_code(page, code):
    page.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)


def sign_up(page, username):
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()


def test_a_new_learner_signs_up_practises_and_sees_their_progress(page, bank, eager, shoot):
    page.goto("/")
    expect(
        page.get_by_role("heading", name="Walk into your PyTorch interview ready.")
    ).to_be_visible()
    page.get_by_role("link", name="Sign up").first.click()
    sign_up(page, "newlearner")
    expect(page.get_by_role("heading", name="Welcome.")).to_be_visible()

    # Filter to one topic and one difficulty: the list updates in place and the URL follows.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Questions").click()
    expect(page.locator("#results .question-list > li")).to_have_count(3)
    topic = page.get_by_role("checkbox", name="Tensors")
    topic.check()
    expect(page).to_have_url(re.compile(r"/questions/\?topic=tensors$"))
    expect(page.locator("#results .question-list > li")).to_have_count(2)
    expect(topic).to_be_focused()
    page.get_by_role("checkbox", name="Easy").check()
    expect(page).to_have_url(re.compile(r"/questions/\?topic=tensors&difficulty=easy$"))
    expect(page.locator("#results .question-list > li")).to_have_count(1)
    expect(page.locator("#count-topic-autograd")).to_have_text("1")
    expect(page.locator("#results-status")).to_have_text("1 question found")
    shoot("list")
    page.get_by_role("link", name="Double a tensor").click()

    # A hint, then a quick check graded on the spot with its explanation.
    page.get_by_role("button", name="Reveal hint 1").click()
    expect(page.get_by_text("Multiplying by a Python number broadcasts.")).to_be_visible()
    expect(page.get_by_role("button", name="Reveal hint 2")).to_be_visible()
    page.get_by_role("radio", name="B tensor([2., 2.])").check()
    page.get_by_role("button", name="Check").click()
    expect(page.get_by_text("✓ Right.")).to_be_visible()
    expect(page.get_by_text("Each element is multiplied; the float dtype stays.")).to_be_visible()
    shoot("question")

    # A wrong solution, submitted from the keyboard, then a right one: both verdicts, live.
    verdict = page.locator("#verdict")
    replace_code(page, WRONG)
    page.keyboard.press("Control+Shift+Enter")  # Ctrl+Enter alone runs the examples
    expect(verdict).to_contain_text("✗ Failed", timeout=GRADING)
    expect(verdict.locator("li.failed").first).to_be_visible()
    expect(verdict.locator("li.failed .check-message").first).not_to_be_empty()
    shoot("exercise-failed", page.locator("#exercise"))
    replace_code(page, RIGHT)
    page.get_by_role("button", name="Submit").click()
    expect(verdict).to_contain_text("✓ Passed", timeout=GRADING)
    expect(verdict.locator("li.passed")).to_have_count(len(DOUBLE_CHECKS))
    expect(page.locator("#submissions li")).to_have_count(2)
    assert list(Submission.objects.values_list("status", flat=True)) == ["passed", "failed"]
    page.locator("#exercise").scroll_into_view_if_needed()
    shoot("exercise", page.locator("#exercise"))

    # The progress page has changed: one question solved in Tensors, the activity listed.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Progress").click()
    expect(page.get_by_role("row", name=re.compile("Tensors"))).to_contain_text("1 solved")
    expect(page.locator(".recent")).to_contain_text("Code passed")
    expect(page.locator(".recent")).to_contain_text("Answered a quick check right")
    expect(page.locator(".heatmap rect.l0").first).to_be_attached()
    shoot("progress")
    page.get_by_role("link", name="quizbank").first.click()
    expect(page.get_by_role("heading", name="Welcome.")).to_be_visible()
    shoot("home")


def test_a_visitors_code_draft_is_still_there_after_signing_up(page, bank):
    page.goto("/questions/double-it/")
    replace_code(page, "def double(x):\n    return x * 2  # my own draft\n")
    page.get_by_role("link", name="Sign in to submit").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
    page.get_by_role("link", name="Create an account").click()
    sign_up(page, "drafter")
    expect(page).to_have_url(re.compile(r"/questions/double-it/#exercise$"))
    expect(page.locator(".cm-content")).to_contain_text("# my own draft")
    expect(page.locator("#draft-status")).to_have_text("Your draft was restored.")
    # Resetting asks first: dismissed, the draft stays; accepted, the starter is back.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Reset to the starter code").click()
    expect(page.locator(".cm-content")).to_contain_text("# my own draft")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reset to the starter code").click()
    expect(page.locator(".cm-content")).to_contain_text("raise NotImplementedError")


def test_on_a_shared_browser_the_next_learner_never_sees_a_draft(page, bank, django_user_model):
    for name in ("first", "second"):
        django_user_model.objects.create_user(name, password=PASSWORD)

    def sign_in(name):
        page.goto("/accounts/login/?next=/questions/double-it/")
        page.get_by_label("Username").fill(name)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(re.compile(r"/questions/double-it/$"))

    sign_in("first")
    replace_code(page, "def double(x):\n    return x + x  # first's secret\n")
    page.reload()
    expect(page.locator(".cm-content")).to_contain_text("# first's secret")
    # The first learner walks away without signing out: the next one still sees only the starter.
    page.context.clear_cookies()
    sign_in("second")
    expect(page.locator(".cm-content")).to_contain_text("raise NotImplementedError")
    expect(page.locator(".cm-content")).not_to_contain_text("first's secret")
    # Signing out clears this browser's drafts altogether.
    page.get_by_role("button", name="Sign out").click()
    drafts = page.evaluate(
        "Object.keys(localStorage).filter((k) => k.startsWith('quizbank:draft:'))"
    )
    assert drafts == []


def test_a_queued_verdict_appears_without_a_reload_check_by_check(page, bank, django_user_model):
    """With a broker the page polls while a submission is queued or running; here a worker's
    result is written straight to the row, as a Celery worker would."""
    learner = django_user_model.objects.create_user("waiter", password=PASSWORD)
    queued = Submission.objects.create(user=learner, question=bank, code=RIGHT)
    page.goto("/accounts/login/?next=/questions/double-it/")
    page.get_by_label("Username").fill("waiter")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("Queued…")
    Submission.objects.filter(pk=queued.pk).update(status="running")
    expect(verdict).to_contain_text("Running…")
    Submission.objects.filter(pk=queued.pk).update(
        status="failed",
        message="1 of 2 checks failed: keeps the dtype.",
        checks=[
            {"name": "doubles an example", "status": "passed", "message": "", "visible": True},
            {"name": "keeps the dtype", "status": "failed", "message": "dtype differs"},
        ],
    )
    expect(verdict).to_contain_text("✗ Failed")
    expect(verdict.locator("li.failed")).to_contain_text("dtype differs")
    expect(page.locator("#submissions")).to_contain_text("Failed")
    expect(verdict).not_to_have_attribute("hx-get", re.compile("."))


def test_the_theme_follows_the_system_until_chosen_and_is_remembered(page, bank):
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    background = "return getComputedStyle(document.body).backgroundColor"
    dark = page.evaluate(f"() => {{ {background} }}")
    toggle = page.get_by_role("button", name=re.compile("Theme"))
    expect(toggle).to_contain_text("system")
    toggle.click()
    expect(toggle).to_contain_text("light")
    light = page.evaluate(f"() => {{ {background} }}")
    assert light != dark
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    toggle = page.get_by_role("button", name=re.compile("Theme"))
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    toggle.click()
    expect(page.locator("html")).not_to_have_attribute("data-theme", re.compile("."))


def test_the_main_pages_fit_a_phone(browser, live_server, bank):
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 390, "height": 844}, is_mobile=True
    )
    page = context.new_page()
    try:
        for path in ("/", "/questions/", "/questions/double-it/", "/accounts/login/"):
            page.goto(path)
            overflow = page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{path} scrolls sideways by {overflow}px on a phone"
        target = os.environ.get("SCREENSHOT_DIR")
        for name, path in (
            ("phone-list", "/questions/"),
            ("phone-question", "/questions/double-it/"),
        ):
            if target:
                page.goto(path)
                page.screenshot(path=f"{target}/{name}-light.png", full_page=True)
    finally:
        context.close()


def test_examples_then_a_diagnosed_mistake_then_a_pass_that_updates_the_page(
    page, bank, eager, shoot
):
    page.goto("/accounts/signup/")
    sign_up(page, "solver")
    page.goto("/questions/double-it/?topic=tensors")
    page.evaluate("window.__noReload = true")  # gone if the page reloads
    verdict = page.locator("#verdict")

    replace_code(page, WRONG)
    page.get_by_role("button", name="Run examples").click()
    expect(verdict).to_contain_text("examples run", timeout=GRADING)
    expect(verdict.locator("ul.checks li")).to_have_count(1)  # the visible example only

    page.get_by_role("button", name="Submit").click()
    expect(verdict.locator(".diagnosis")).to_contain_text(
        "You may be assuming that doubling means adding two.", timeout=GRADING
    )
    shoot("diagnosis", page.locator("#exercise"))

    replace_code(page, RIGHT)
    page.keyboard.press("Control+Shift+Enter")  # submits from the editor
    expect(verdict).to_contain_text("Passed", timeout=GRADING)
    expect(page.locator("#progress-badge")).to_contain_text("Solved")
    expect(page.locator("#practice-card")).to_contain_text("Solved on")
    assert page.evaluate("window.__noReload") is True
    shoot("passed-and-updated")

    page.locator("#next-in-list").click()
    expect(page).to_have_url(re.compile(r"/questions/strides/\?topic=tensors$"))
