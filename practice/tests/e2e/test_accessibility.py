"""axe-core on every learner page, in the light and the dark theme.

axe-core is vendored (vendor/axe.min.js, copied there by frontend/build.mjs with its licence), so
this needs no network and no npm at test time. The pages' Content-Security-Policy forbids inline
scripts, so the test's browser context bypasses CSP to inject it."""

from pathlib import Path

import pytest
from django.utils import timezone

from practice.models import ReviewCard

from .browser import needs_browser
from .site_data import Site, sign_in, site  # noqa: F401 - site is a fixture

pytestmark = needs_browser

AXE = (Path(__file__).parent / "vendor" / "axe.min.js").read_text()


def learner_pages(s: Site) -> list[str]:
    return [
        "/",
        "/questions/",
        "/questions/?topic=nope",
        s.concept,
        s.code,
        "/review/",
        "/progress/",
        "/interviews/",
        "/interviews/new/",
        f"/interviews/{s.interview}/",
        f"/interviews/{s.report}/",
        "/plans/",
        s.plan,
        "/accounts/profile/",
        "/accounts/tokens/",
        f"/submissions/{s.submission}/",
        "/no-such-page/",
        f"{s.code}bookmark/",  # the 405 page
    ]


VISITOR_PAGES = ["/accounts/login/", "/accounts/signup/", "/", "/questions/"]


def describe(url: str, violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{url}: {v['id']} ({v['impact']}): {v['help']} <{v['helpUrl']}>")
        for node in v["nodes"][:5]:
            summary = " ".join(node.get("failureSummary", "").split())
            lines.append(f"    {' '.join(map(str, node['target']))}: {summary}")
    return "\n".join(lines)


def check(page, urls: list[str]) -> list[str]:
    found = []
    for url in urls:
        page.goto(url)
        found += check_here(page, url)
    return found


def check_here(page, label: str) -> list[str]:
    """axe on the page as it is now (after an action, say)."""
    page.wait_for_load_state("networkidle")
    page.add_script_tag(content=AXE)
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [describe(label, result["violations"])] if result["violations"] else []


def check_states(page, s: Site) -> list[str]:
    """Page states a plain visit does not show: a flash message, a revealed answer with its
    rating buttons and their intervals."""
    page.goto("/accounts/profile/")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_text("Profile saved.").wait_for()
    found = check_here(page, "/accounts/profile/ (a message: Profile saved.)")
    page.goto(s.concept)
    page.get_by_role("button", name="Show the answer").click()
    page.locator("#rate-again").wait_for()
    found += check_here(page, f"{s.concept} (the answer and its rating buttons)")
    ReviewCard.objects.update(due=timezone.now())
    page.goto("/review/")
    page.keyboard.press("Space")
    page.locator("#rate-again").wait_for()
    found += check_here(page, "/review/ (the answer shown, the rating bar)")
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_learner_page_has_no_axe_violations(browser, live_server, site, scheme):  # noqa: F811
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": 1280, "height": 900},
        color_scheme=scheme,
        bypass_csp=True,  # to inject axe; the pages themselves allow no inline script
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        found = check(page, VISITOR_PAGES)
        sign_in(page)
        found += check(page, learner_pages(site))
        found += check_states(page, site)
    finally:
        context.close()
    assert not found, f"axe found problems in the {scheme} theme:\n" + "\n".join(found)
    assert not errors, f"JavaScript errors on the pages: {errors}"


def test_the_vendored_axe_is_the_one_frontend_pins():
    import json

    root = Path(__file__).parents[3]
    pinned = json.loads((root / "frontend" / "package.json").read_text())["devDependencies"]
    assert f'axe.version="{pinned["axe-core"]}"' in AXE
    assert (
        (Path(__file__).parent / "vendor" / "axe.LICENSE.txt")
        .read_text()
        .startswith(f"axe-core@{pinned['axe-core']} (MPL-2.0)")
    )
