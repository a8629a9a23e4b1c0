"""The site on a 390 x 844 phone: nothing wider than the screen, a two-row header, the bookmark
and note near the top of a question, short list rows, and the activity map open on today."""

import pytest

from .browser import needs_browser
from .site_data import sign_in, site  # noqa: F401 - site is a fixture

pytestmark = needs_browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(browser, live_server, site):  # noqa: F811 - site is the fixture imported above
    context = browser.new_context(
        base_url=live_server.url, viewport=PHONE, is_mobile=True, has_touch=True
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page)
    yield page
    context.close()


def test_no_learner_page_is_wider_than_the_phone(phone, site):  # noqa: F811
    wide = {}
    for url in (
        "/",
        "/questions/",
        site.concept,
        site.code,
        "/progress/",
        "/interviews/",
        f"/interviews/{site.report}/",
        "/plans/",
        site.plan,
        "/accounts/profile/",
        f"/submissions/{site.submission}/",
        "/no-such-page/",
    ):
        phone.goto(url)
        width = phone.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            wide[url] = width
    assert not wide, f"pages wider than {PHONE['width']} px: {wide}"


def test_the_header_takes_two_rows(phone):
    phone.goto("/questions/")
    brand = phone.locator(".site-header .brand").bounding_box()
    account = phone.locator(".site-header .account").bounding_box()
    links = [
        box["y"] for box in (a.bounding_box() for a in phone.locator(".site-header nav a").all())
    ]
    # The account beside the brand, and every section link on one line below them.
    assert abs((account["y"] + account["height"] / 2) - (brand["y"] + brand["height"] / 2)) < 8
    assert max(links) - min(links) < 2 and min(links) > brand["y"] + brand["height"] / 2


def test_the_bookmark_and_note_are_on_the_first_screens_of_a_code_question(phone, site):  # noqa: F811
    phone.goto(site.code)
    assert phone.locator("#bookmark-button").bounding_box()["y"] < PHONE["height"]
    assert phone.locator("#note-text").bounding_box()["y"] < 1.5 * PHONE["height"]


def test_a_list_row_keeps_its_tags_to_one_line(phone):
    phone.goto("/questions/")
    tags = phone.locator(".question-list li").first.locator(".meta")
    line = tags.locator(".badge").first.bounding_box()["height"]
    assert tags.bounding_box()["height"] < 2 * line


def test_the_activity_map_opens_on_today(phone):
    phone.goto("/progress/")
    wrap = phone.locator(".heatmap-wrap")
    box = wrap.bounding_box()
    assert phone.evaluate("e => e.scrollWidth > e.clientWidth", wrap.element_handle())
    today = phone.locator(".heatmap rect:not(.future)").last.bounding_box()
    assert box["x"] <= today["x"] and today["x"] + today["width"] <= box["x"] + box["width"]
