"""Shortcuts that do what they say (issue 27): in the code editor, Ctrl+Enter runs the examples
(free, unscored) and Ctrl+Shift+Enter submits, on the question page, a review card and a mock
interview alike. Checked by the mode of the rows the requests made, in a real browser, grading
in-process through the real sandbox."""

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from practice.models import Activity, CodeReview, MockInterview, ReviewCard, Submission
from practice.services import learning
from practice.tests.conftest import DOUBLE_CHECKS
from practice.tests.test_api_submissions import RIGHT, WRONG
from quizbank.tests.factories import ExerciseFactory, QuestionFactory, TopicFactory

from .browser import needs_browser
from .test_learner_journey import GRADING, PASSWORD, replace_code

pytestmark = needs_browser


def sign_in(page, user, next_url):
    page.goto(f"/accounts/login/?next={next_url}")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def modes(user):
    return sorted(Submission.objects.filter(user=user).values_list("mode", flat=True))


def code_question(slug="double-it"):
    topic = TopicFactory(slug="tensors", name="Tensors", order=1)
    question = QuestionFactory(slug=slug, title="Double a tensor", kind="code", primary_topic=topic)
    ExerciseFactory(question=question, checks=DOUBLE_CHECKS, time_limit=10)
    return question


def test_on_the_question_page_ctrl_enter_runs_examples_and_ctrl_shift_enter_submits(
    page, transactional_db, django_user_model, eager
):
    user = django_user_model.objects.create_user("ada", password=PASSWORD)
    code_question()
    sign_in(page, user, "/questions/double-it/")
    verdict = page.locator("#verdict")
    replace_code(page, WRONG)
    page.keyboard.press("Control+Enter")
    expect(verdict).to_contain_text("examples run", timeout=GRADING)
    assert modes(user) == ["examples"]  # no submission row
    page.keyboard.press("Control+Shift+Enter")
    expect(verdict.locator(".diagnosis")).to_contain_text(
        "You may be assuming that doubling means adding two.", timeout=GRADING
    )
    assert modes(user) == ["examples", "submit"]
    # Try your own input: Ctrl+Enter in that cell runs the learner's lines, free.
    page.get_by_text("Try your own input").click()
    page.get_by_label("A few lines that call your functions").fill("print(double(torch.ones(1)))")
    page.get_by_label("A few lines that call your functions").press("Control+Enter")
    expect(verdict).to_contain_text("tensor([3.])", timeout=GRADING)
    assert modes(user) == ["examples", "scratch", "submit"]


def test_on_a_review_card_ctrl_enter_keeps_the_rating_open(
    page, transactional_db, django_user_model, eager
):
    user = django_user_model.objects.create_user("ada", password=PASSWORD)
    question = code_question()
    learning.review_rate(user=user, question=question, rating=Activity.Rating.GOOD)
    ReviewCard.objects.filter(question=question).update(due=timezone.now() - timedelta(minutes=5))
    sign_in(page, user, "/review/")
    verdict = page.locator("#verdict")
    replace_code(page, RIGHT)
    page.keyboard.press("Control+Enter")
    expect(verdict).to_contain_text("examples run", timeout=GRADING)
    assert modes(user) == ["examples"]
    # The examples run cost the card nothing: a first submission that passes is still "good".
    page.keyboard.press("Control+Shift+Enter")
    expect(verdict).to_contain_text("Passed", timeout=GRADING)
    assert modes(user) == ["examples", "submit"]
    review = CodeReview.objects.get(user=user)
    assert review.rating == Activity.Rating.GOOD and review.retries == 0


def test_in_a_mock_interview_ctrl_enter_runs_examples_inside_the_clock(
    page, transactional_db, django_user_model, eager
):
    user = django_user_model.objects.create_user("ada", password=PASSWORD)
    code_question()
    sign_in(page, user, "/interviews/new/")
    page.get_by_label("Tensors").check()
    page.get_by_label("Number of questions").fill("1")
    page.get_by_label("Minutes").fill("10")
    page.get_by_role("button", name="Start the interview").click()
    expect(page.get_by_text("Question 1 of 1")).to_be_visible()
    replace_code(page, WRONG)
    page.keyboard.press("Control+Enter")
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("examples run", timeout=GRADING)
    assert modes(user) == ["examples"]
    # Still on the question, the clock running: running the examples answered nothing.
    expect(page.get_by_text("Question 1 of 1")).to_be_visible()
    interview = MockInterview.objects.get(user=user)
    assert interview.items.filter(answered_at__isnull=False).count() == 0
    replace_code(page, RIGHT)
    page.get_by_role("button", name="Run examples").click()
    expect(verdict).to_contain_text("Passed", timeout=GRADING)
    page.locator(".cm-content").click()  # back in the editor
    page.keyboard.press("Control+Shift+Enter")
    expect(page.get_by_text("Every question is answered")).to_be_visible(timeout=GRADING)
    assert modes(user) == ["examples", "examples", "submit"]


def test_a_failing_generated_check_shows_its_smallest_input_in_the_page(
    page, transactional_db, django_user_model, eager
):
    from practice.tests.test_diagnosis import VARIANCE, VARIANCE_IN_FLOAT32

    user = django_user_model.objects.create_user("ada", password=PASSWORD)
    ExerciseFactory(
        question=QuestionFactory(slug="variance", title="Variance", kind="code"),
        solution_code=VARIANCE,
        wrong_solutions={},
        checks=[
            {
                "name": "every family, float64",
                "code": "cases = gen.floats((3, 4), dtype=torch.float64)\n"
                "outs = gen.each(cases, lambda x: variance(x).float())",
                "compare": "outs",
            }
        ],
    )
    sign_in(page, user, "/questions/variance/")
    replace_code(page, VARIANCE_IN_FLOAT32)
    page.keyboard.press("Control+Shift+Enter")
    example = page.locator("#verdict .counterexample")
    expect(example).to_contain_text(
        "the values are large (around 1e4) and close together", timeout=GRADING
    )
    expect(example).to_contain_text("dtype=torch.float64)")  # the input, whole
    expect(page.locator("#verdict")).to_contain_text("Matches on ordinary inputs")
