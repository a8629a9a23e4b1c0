"""Code on the site: highlighted, readable in both themes, and reachable by keyboard when it
scrolls."""

import re
from pathlib import Path

from django.conf import settings

from quizbank.markdown import (
    CODE_BG_DARK,
    CODE_BG_LIGHT,
    MIN_CONTRAST,
    contrast,
    pygments_css,
    render_code_block,
    render_markdown,
)

STATIC = Path(settings.BASE_DIR) / "static" / "css"


def test_every_token_colour_is_readable_on_its_code_background():
    css = pygments_css()
    light, dark = css.split(":root[data-theme=dark]", 1)
    for part, background in ((light, CODE_BG_LIGHT), (dark, CODE_BG_DARK)):
        colours = re.findall(r"(?<![-\w])color: (#[0-9a-fA-F]{3,6})", part)
        assert colours
        faint = [c for c in colours if contrast(c, background) < MIN_CONTRAST]
        assert not faint, f"token colours under {MIN_CONTRAST}:1 on {background}: {faint}"


def test_the_code_backgrounds_are_the_sites_and_the_stylesheet_is_generated():
    site = (STATIC / "site.css").read_text()
    assert f"--code-bg: light-dark({CODE_BG_LIGHT}, {CODE_BG_DARK});" in site
    assert (STATIC / "pygments.css").read_text() == pygments_css()


def test_fenced_code_is_keyboard_scrollable_and_named():
    html = render_markdown("```python\nx = 1\n```\n\n```\nplain\n```")
    assert (
        '<pre tabindex="0" role="group" aria-label="Python code"><code class="language-python">'
        in (html)
    )
    assert '<pre tabindex="0" role="group" aria-label="Code"><code>plain' in html


def test_a_code_block_highlights_and_escapes():
    html = render_code_block("print('<b>')", lang="python", label="Your code")
    assert html.startswith('<pre tabindex="0" role="group" aria-label="Your code"><code>')
    assert '<span class="nb">print</span>' in html and "&lt;b&gt;" in html
    assert "<b>" not in html
    assert render_code_block("<x>", label='a "b"') == (
        '<pre tabindex="0" role="group" aria-label="a &quot;b&quot;"><code>&lt;x&gt;</code></pre>'
    )
