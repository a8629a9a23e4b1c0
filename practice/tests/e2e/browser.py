import importlib.util
import os

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _missing() -> str:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e . --group dev)"
    if not os.path.exists(CHROMIUM):
        return f"no browser at {CHROMIUM} (apt-get install -y chromium)"
    return ""


# For each end-to-end module: they need the browser, and a live server, which needs real
# transactions (the server's thread must see what the test wrote).
needs_browser = [
    pytest.mark.skipif(bool(_missing()), reason=f"end-to-end browser test: {_missing()}"),
    pytest.mark.django_db(transaction=True),
]
