"""End-to-end tests: Debian's chromium driven by Playwright against pytest-django's live server.

They skip, saying why, where /usr/bin/chromium or playwright is missing (CI installs chromium
before `make test`). Playwright never downloads a browser here: it drives the system's chromium.
Set SCREENSHOT_DIR to also save screenshots of the main pages in both themes.
"""

import os
from pathlib import Path

import pytest

from .browser import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright  # here: without it, the tests skip first

    # Playwright's sync API runs an event loop in this thread, which makes Django refuse ORM
    # calls from the test body; the live server runs in its own thread either way.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def shoot(page):
    """shoot(name, element=None): screenshots of the page (or one element of it), light then dark,
    when SCREENSHOT_DIR is set. Dark follows the system's preference, as on a first visit."""
    target = os.environ.get("SCREENSHOT_DIR")

    def take(name: str, element=None) -> None:
        if not target:
            return
        Path(target).mkdir(parents=True, exist_ok=True)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            path = f"{target}/{name}-{scheme}.png"
            if element is not None:
                element.screenshot(path=path)
            else:
                page.screenshot(path=path, full_page=True)
        page.emulate_media(color_scheme="light")

    return take
