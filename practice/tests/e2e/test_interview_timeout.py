"""A mock interview's typed answer survives a reload, and is sent as the answer when the time runs
out (issue 29, finding 4): the server's clock still decides, so the page sends it just before."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from practice.models import MockInterview
from practice.services import interviews
from quizbank.tests.factories import QuestionFactory

from .browser import needs_browser
from .site_data import PASSWORD, sign_in

pytestmark = needs_browser


@pytest.fixture
def interview(transactional_db, django_user_model):
    user = django_user_model.objects.create_user("ada", password=PASSWORD)
    QuestionFactory(slug="why-zero-grad", title="Why zero the gradients?", answer="They add up.")
    return interviews.interview_create(
        user=user, topics=[], difficulty=[], questions=1, minutes=5, title="Short"
    )


def test_the_typed_answer_is_kept_and_sent_when_time_runs_out(page, interview, shoot):
    sign_in(page)
    page.goto(f"/interviews/{interview.pk}/")
    answer = page.get_by_label("Your answer")
    answer.fill("Gradients accumulate across backward calls.")
    page.reload()
    expect(answer).to_have_value("Gradients accumulate across backward calls.")
    shoot("interview-typed")

    MockInterview.objects.filter(pk=interview.pk).update(
        ends_at=timezone.now() + timedelta(seconds=10)
    )
    page.reload()
    expect(answer).to_have_value("Gradients accumulate across backward calls.")
    # Sent at 3 s left, then the page reloads at zero and shows the report.
    expect(page.get_by_role("heading", name="Report: Short")).to_be_visible(timeout=30_000)
    expect(page.locator("main")).to_contain_text("Gradients accumulate across backward calls.")
    shoot("interview-report-after-time-out")
    item = MockInterview.objects.get(pk=interview.pk).items.get()
    assert item.answer_text == "Gradients accumulate across backward calls."
    assert item.outcome == "answered" and item.answered_at < interview_end(interview)


def interview_end(interview):
    return MockInterview.objects.get(pk=interview.pk).ends_at
