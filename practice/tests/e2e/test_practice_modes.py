"""Mock interviews, study plans and review by keyboard, in a real browser against the live server
(grading in-process through the real sandbox)."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from practice.models import Activity, PlanItem, PlanSection, ReviewCard, StudyPlan
from practice.services import learning
from practice.tests.conftest import DOUBLE_CHECKS
from practice.tests.test_api_submissions import RIGHT
from quizbank.tests.factories import (
    ExerciseFactory,
    QuestionFactory,
    QuickCheckFactory,
    TopicFactory,
)

from .browser import needs_browser
from .test_learner_journey import GRADING, PASSWORD, replace_code

pytestmark = needs_browser


@pytest.fixture
def learner(transactional_db, django_user_model):
    return django_user_model.objects.create_user("ada", password=PASSWORD)


def sign_in(page, next_url):
    page.goto(f"/accounts/login/?next={next_url}")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_a_mock_interview_from_start_to_report(page, learner, eager, shoot):
    topic = TopicFactory(slug="interviewing", name="Interviewing", order=1)
    concept = QuestionFactory(
        slug="why-tensors", title="Why tensors", primary_topic=topic, difficulty="easy"
    )
    QuickCheckFactory(question=concept, order=1, prompt="Pick the second.", answer=1)
    code = QuestionFactory(
        slug="double-it",
        title="Double a tensor",
        primary_topic=topic,
        kind="code",
        difficulty="medium",
    )
    ExerciseFactory(question=code, checks=DOUBLE_CHECKS, time_limit=10)
    sign_in(page, "/interviews/new/")
    page.get_by_label("Interviewing").check()
    page.get_by_label("Number of questions").fill("2")
    page.get_by_label("Minutes").fill("10")
    page.get_by_role("button", name="Start the interview").click()
    expect(page.get_by_text("Question 1 of 2")).to_be_visible()
    expect(page.locator("[data-countdown]")).to_have_text(re.compile(r"^(10:00|9:[0-5]\d)$"))
    expect(page.locator("main")).not_to_contain_text("Easy")
    shoot("interview-question")
    page.get_by_label("Your answer").fill("Arrays with a device and autograd.")
    page.locator("input[name^=check-]").nth(1).check()
    page.get_by_role("button", name="Answer and go on").click()
    expect(page.get_by_text("Question 2 of 2")).to_be_visible()
    replace_code(page, RIGHT)
    # Grading runs inside this request here (no broker), and the first one starts the sandbox.
    page.get_by_role("button", name="Submit and go on").click(no_wait_after=True)
    expect(page.get_by_text("Every question is answered")).to_be_visible(timeout=GRADING)
    page.get_by_role("button", name="Finish now").click()
    report = page.locator("table.report")
    expect(report.locator("tr", has_text="Why tensors")).to_contain_text("Passed")
    expect(report.locator("tr", has_text="Double a tensor")).to_contain_text("Passed")
    expect(page.locator("main")).to_contain_text("Score: 100%")
    page.get_by_text("The model answer").first.click()
    expect(page.locator("main")).to_contain_text("Arrays with a device and autograd.")
    shoot("interview-report")
    page.goto("/interviews/")
    expect(page.locator("table.interviews")).to_contain_text("100%")


def test_a_plan_started_and_continued_from_the_home_page(page, learner):
    first = QuestionFactory(slug="first-step", title="First step")
    second = QuestionFactory(slug="second-step", title="Second step")
    plan = StudyPlan.objects.create(slug="basics", title="Basics in a day", description="Go.")
    section = PlanSection.objects.create(plan=plan, order=1, title="Morning")
    PlanItem.objects.create(section=section, question=first, order=1)
    PlanItem.objects.create(section=section, question=second, order=2)
    sign_in(page, "/plans/")
    page.get_by_role("link", name="Basics in a day").click()
    page.get_by_role("button", name="Start this plan").click()
    expect(page.get_by_role("link", name="Continue: First step")).to_be_visible()
    learning.review_rate(user=learner, question=first, rating=Activity.Rating.GOOD)
    page.goto("/")
    expect(page.locator("main")).to_contain_text("Basics in a day")
    page.locator("#continue-plan").click()
    expect(page).to_have_url(re.compile(r"/questions/second-step/\?plan=basics$"))


def test_a_review_session_driven_by_the_keyboard(page, learner):
    for slug in ("recall-one", "recall-two"):
        question = QuestionFactory(slug=slug, title=slug.replace("-", " ").capitalize())
        learning.review_rate(user=learner, question=question, rating=Activity.Rating.AGAIN)
    ReviewCard.objects.update(due=timezone.now() - timedelta(minutes=5))
    sign_in(page, "/review/")
    expect(page.locator(".review-count")).to_contain_text("2 questions to go")
    answer = page.locator("details#answer")
    expect(answer).not_to_have_attribute("open", "")
    page.keyboard.press("Space")
    expect(answer).to_have_attribute("open", "")
    expect(page.locator("#rate-easy .interval")).to_have_text(re.compile(r"\d+ (min|h|d|mo)"))
    page.keyboard.press("4")
    expect(page.locator(".review-count")).to_contain_text("1 question to go")
    page.keyboard.press("Space")
    page.keyboard.press("1")
    expect(page.locator("main")).to_contain_text("Rated “again”")
    ratings = list(
        Activity.objects.filter(user=learner, kind="rating")
        .order_by("id")
        .values_list("rating", flat=True)
    )
    assert ratings[-2:] == [Activity.Rating.EASY, Activity.Rating.AGAIN]


def test_with_the_grading_queue_down_the_form_says_so_and_keeps_the_code(page, learner, settings):
    """The broker really unreachable (a closed port): the form shows why, nothing is stored."""
    from practice.models import Submission
    from practice.tests.test_outages import closed_port, use_broker
    from practice.views.actions import GRADING_UNAVAILABLE
    from quizbank.celery import app

    question = QuestionFactory(slug="double-it", title="Double a tensor", kind="code")
    ExerciseFactory(question=question, checks=DOUBLE_CHECKS, time_limit=10)
    previous, eager = app.conf.broker_url, app.conf.task_always_eager
    use_broker(f"redis://127.0.0.1:{closed_port()}/0")
    app.conf.task_always_eager = False
    settings.CELERY_TASK_ALWAYS_EAGER = False
    try:
        sign_in(page, "/questions/double-it/")
        replace_code(page, RIGHT)
        page.get_by_role("button", name="Submit").click()
        expect(page.locator("#verdict")).to_contain_text(GRADING_UNAVAILABLE)
        expect(page.locator(".cm-content")).to_contain_text("return x * 2")
        expect(page.get_by_role("button", name="Submit")).to_be_enabled()
    finally:
        use_broker(previous)
        app.conf.task_always_eager = eager
    assert not Submission.objects.exists()
