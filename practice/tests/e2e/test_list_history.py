"""Back and Forward on the question list: the filters the results show are the ones ticked, so the
next tick adds to them rather than silently dropping them (issue 29, finding 3)."""

import re

import pytest
from playwright.sync_api import expect

from quizbank.tests.factories import QuestionFactory, TopicFactory

from .browser import needs_browser

pytestmark = needs_browser


@pytest.fixture
def bank(transactional_db):
    tensors = TopicFactory(slug="tensors", name="Tensors", order=1)
    autograd = TopicFactory(slug="autograd", name="Autograd", order=2)
    QuestionFactory(slug="t-easy", title="Tensor easy", primary_topic=tensors, difficulty="easy")
    QuestionFactory(slug="t-hard", title="Tensor hard", primary_topic=tensors, difficulty="hard")
    QuestionFactory(slug="a-easy", title="Graph easy", primary_topic=autograd, difficulty="easy")
    QuestionFactory(slug="a-med", title="Graph medium", primary_topic=autograd, difficulty="medium")


def test_back_and_forward_put_the_ticks_back_with_the_results(page, bank, shoot):
    rows = page.locator("#results .question-list > li")
    tensors = page.get_by_role("checkbox", name="Tensors")
    easy = page.get_by_role("checkbox", name="Easy")
    page.goto("/questions/")
    expect(rows).to_have_count(4)
    tensors.check()
    expect(page).to_have_url(re.compile(r"\?topic=tensors$"))
    expect(rows).to_have_count(2)
    easy.check()
    expect(page).to_have_url(re.compile(r"\?topic=tensors&difficulty=easy$"))
    expect(rows).to_have_count(1)

    page.go_back()
    expect(page).to_have_url(re.compile(r"\?topic=tensors$"))
    expect(rows).to_have_count(2)
    expect(tensors).to_be_checked()
    expect(easy).not_to_be_checked()
    shoot("list-after-back")

    page.go_back()
    expect(page).to_have_url(re.compile(r"/questions/$"))
    expect(rows).to_have_count(4)
    expect(tensors).not_to_be_checked()

    page.go_forward()
    expect(page).to_have_url(re.compile(r"\?topic=tensors$"))
    expect(tensors).to_be_checked()
    expect(easy).not_to_be_checked()

    # The next tick keeps the filter Back brought back.
    page.get_by_role("checkbox", name="Hard").check()
    expect(page).to_have_url(re.compile(r"\?topic=tensors&difficulty=hard$"))
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Tensor hard")
