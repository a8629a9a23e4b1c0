"""Where things sit on a question page (issue 29, finding 6): at 1280 x 800 the sticky exercise
panel leaves the list's "next" link uncovered, and on a phone a visitor reads the prompt right
under the title, the invitations to sign in after it; the welcome after signing up is in view where
the learner lands."""

import pytest
from playwright.sync_api import expect

from .browser import needs_browser
from .site_data import PASSWORD, sign_in, site  # noqa: F401 - site is a fixture

pytestmark = needs_browser


@pytest.fixture
def open_page(browser, live_server):
    contexts = []

    def new(viewport, **options):
        context = browser.new_context(base_url=live_server.url, viewport=viewport, **options)
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context.new_page()

    yield new
    for context in contexts:
        context.close()


def clickable(page, selector: str) -> bool:
    """Whether the element at the middle of `selector` is it (or inside it): nothing covers it."""
    return page.evaluate(
        """(selector) => {
            const el = document.querySelector(selector);
            const box = el.getBoundingClientRect();
            const top = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
            return el === top || el.contains(top);
        }""",
        selector,
    )


def test_the_exercise_panel_never_covers_the_next_question_link(open_page, site):  # noqa: F811
    page = open_page({"width": 1280, "height": 800})
    sign_in(page)
    page.goto(site.code)
    link = page.locator("#next-question")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    assert clickable(page, "#next-question")
    bench = page.locator(".workbench").bounding_box()
    box = link.bounding_box()
    assert box["x"] + box["width"] <= bench["x"] or box["y"] >= bench["y"] + bench["height"]


@pytest.mark.parametrize("question", ["code", "concept"])
def test_on_a_phone_a_visitor_reads_the_prompt_under_the_title(open_page, site, question):  # noqa: F811
    page = open_page({"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.goto(getattr(site, question))
    prompt = page.locator("section.prompt").bounding_box()
    practice = page.locator("aside").bounding_box()
    assert prompt["y"] < 844 and prompt["y"] < practice["y"]


def test_the_welcome_after_signing_up_is_in_view_where_the_learner_lands(open_page, site):  # noqa: F811
    page = open_page({"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.goto(f"/accounts/signup/?next={site.code}%23exercise")
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url(f"**{site.code}#exercise")
    page.wait_for_load_state("load")
    welcome = page.get_by_text("Welcome! Your progress is saved from now on.")
    expect(welcome).to_be_in_viewport()
    expect(page.locator("#exercise")).to_be_in_viewport()
    page.get_by_role("button", name="Close").click()
    expect(welcome).not_to_be_in_viewport()
