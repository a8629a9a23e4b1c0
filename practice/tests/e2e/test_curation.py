"""A curator edits an exercise in the admin of a real browser; a real Celery worker verifies the
new version through the real sandbox while the page shows it verifying, then verified; learners
then get it. The web process grades nothing (a broker, and a worker process, as in production)."""

from playwright.sync_api import expect

from quizbank.tests.factories import ExerciseFactory, QuestionFactory

from ..conftest import DOUBLE_CHECKS
from ..test_reliability import redis_server, worker  # noqa: F401 (fixtures)
from .browser import needs_browser
from .test_learner_journey import PASSWORD

pytestmark = needs_browser

NEW_STARTER = "def double(x):\n    # multiply by two\n    raise NotImplementedError\n"
VERIFYING = 180_000  # ms: the worker starts its sandbox (torch) before it verifies


def sign_in(page, username: str) -> None:
    page.goto("/admin/login/?next=/admin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_a_curator_edit_goes_live_once_the_worker_verified_it(
    page,
    browser,
    live_server,
    django_user_model,
    worker,  # noqa: F811
):
    worker()
    django_user_model.objects.create_superuser("chief", password=PASSWORD)
    django_user_model.objects.create_user("ada", password=PASSWORD)
    question = QuestionFactory(slug="double-it", title="Double a tensor", kind="code")
    exercise = ExerciseFactory(question=question, checks=DOUBLE_CHECKS, time_limit=10)

    sign_in(page, "chief")
    page.goto(f"/admin/quizbank/question/{question.pk}/change/")
    state = page.locator("#exercise-version")
    expect(state).to_contain_text("Version 1: verified. Learners get this version.")
    page.locator("#id_exercise-0-starter_code").fill(NEW_STARTER)
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator("ul.messagelist")).to_contain_text("version 2; the grader is verifying")
    expect(state).to_contain_text("Version 2: verifying in the grader")
    expect(state).to_contain_text("Learners get version 1 until this one is verified")
    expect(state).to_contain_text("Version 2: verified", timeout=VERIFYING)  # no reload: polled
    expect(state).to_contain_text("Learners get this version.")
    assert exercise.live_version.number == 2

    learner = browser.new_context(base_url=live_server.url).new_page()
    learner.goto("/accounts/login/?next=/questions/double-it/")
    learner.get_by_label("Username").fill("ada")
    learner.get_by_label("Password").fill(PASSWORD)
    learner.get_by_role("button", name="Sign in").click()
    expect(learner.locator("#exercise")).to_contain_text("# multiply by two")
    learner.context.close()
