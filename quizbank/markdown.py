"""Markdown for the bank's text: CommonMark via markdown-it-py, code highlighted by Pygments, and
the HTML sanitised by nh3 (content is staff-written, but a sanitiser makes a mistake harmless)."""

import re
from functools import lru_cache

import nh3
from django.utils.html import escape
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, attrs: str) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    return highlight(code, lexer, _FORMATTER)


# Formulas: $...$ inline and $$...$$ on their own lines become <span class="math inline"> and
# <div class="math block"> holding the TeX source, which static/js/math.js renders with KaTeX.
# Inside code spans and blocks a $ is just a character.
_MD = (
    MarkdownIt("commonmark", {"highlight": _highlight, "html": False})
    .enable("table")
    .use(dollarmath_plugin, allow_space=False, allow_digits=False, double_inline=True)
)

_TAGS = nh3.ALLOWED_TAGS | {
    "pre",
    "code",
    "span",
    "div",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
_ATTRIBUTES = {
    **nh3.ALLOWED_ATTRIBUTES,
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "pre": {"class"},
}


# A code block scrolls sideways when a line is long: tabindex lets a keyboard reach it to scroll,
# and role=group with a name tells a screen reader what it landed on (a <pre> may not carry a
# name without a role; a region would add a landmark per block).
_PRE_ATTRS = 'tabindex="0" role="group" aria-label="{}"'
_FENCE = re.compile(r'<pre><code(?: class="language-([\w+#-]+)")?>')


def _label(lang: str | None) -> str:
    return f"{lang.capitalize()} code" if lang else "Code"


def _focusable_pre(match: re.Match[str]) -> str:
    attrs = _PRE_ATTRS.format(escape(_label(match.group(1))))
    return f"<pre {attrs}>{match.group(0).removeprefix('<pre>')}"


@lru_cache(maxsize=1024)
def render_markdown(text: str) -> str:
    # The attributes are added after sanitising: they are constants, not content.
    html = nh3.clean(_MD.render(text), tags=_TAGS, attributes=_ATTRIBUTES)
    return _FENCE.sub(_focusable_pre, html)


def render_code_block(code: str, *, lang: str = "", label: str = "") -> str:
    """A learner's code or a program's output as the bank's code blocks are: highlighted by
    Pygments (when lang is given), keyboard-scrollable, and named."""
    body = _highlight(code, lang, "") if lang else escape(code)
    attrs = _PRE_ATTRS.format(escape(label or _label(lang)))
    return f"<pre {attrs}><code>{body}</code></pre>"


@lru_cache(maxsize=1024)
def render_markdown_inline(text: str) -> str:
    """One line of Markdown without the paragraph around it (a quick check's choice)."""
    return nh3.clean(_MD.renderInline(text), tags=_TAGS, attributes=_ATTRIBUTES)


LIGHT_STYLE, DARK_STYLE = "default", "github-dark"


# The code block's background in each theme (--code-bg in static/css/site.css; a test pins that
# they agree): every token colour is checked against it.
CODE_BG_LIGHT, CODE_BG_DARK = "#f6f7f9", "#161a20"
MIN_CONTRAST = 4.5  # WCAG AA for normal text
_COLOUR = re.compile(r"(?<![-\w])color: (#[0-9a-fA-F]{3,6})\b")


def _luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _readable(colour: str, background: str) -> str:
    """The colour, or the nearest shade of it (towards black on a light background, white on a
    dark one) that reaches MIN_CONTRAST: the styles' hues stay, the few faint ones get legible."""
    if contrast(colour, background) >= MIN_CONTRAST:
        return colour
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    rgb = [int(digits[i : i + 2], 16) for i in (0, 2, 4)]
    target = 0 if _luminance(background) > 0.5 else 255
    for step in range(1, 101):
        mixed = [round(c + (target - c) * step / 100) for c in rgb]
        candidate = "#" + "".join(f"{c:02x}" for c in mixed)
        if contrast(candidate, background) >= MIN_CONTRAST:
            return candidate
    return "#000000" if target == 0 else "#ffffff"


def _token_rules(style: str, scope: str, background: str) -> list[str]:
    # Token colours only: the block's background and text colour come from the site's theme.
    rules = HtmlFormatter(style=style).get_style_defs(f"{scope} pre").splitlines()
    rules = [r.strip() for r in rules if " ." in r.split("{")[0] and ".linenos" not in r]
    return [_COLOUR.sub(lambda m: f"color: {_readable(m.group(1), background)}", r) for r in rules]


def pygments_css() -> str:
    """static/css/pygments.css: code colours for the light theme, and for the dark one whether it
    is chosen with the toggle or followed from the system, each readable on its code background.
    Regenerate with `.venv/bin/python -c "import django; django.setup(); from quizbank.markdown
    import pygments_css; print(pygments_css(), end='')" > static/css/pygments.css`
    (DJANGO_SETTINGS_MODULE=quizbank.settings)."""
    dark = ":root:not([data-theme=light])"
    lines = [f"/* Generated by quizbank.markdown.pygments_css ({LIGHT_STYLE} / {DARK_STYLE}). */"]
    lines += _token_rules(LIGHT_STYLE, "", CODE_BG_LIGHT)
    lines += _token_rules(DARK_STYLE, ":root[data-theme=dark]", CODE_BG_DARK)
    lines.append("@media (prefers-color-scheme: dark) {")
    lines += ["  " + rule for rule in _token_rules(DARK_STYLE, dark, CODE_BG_DARK)]
    lines.append("}")
    return "\n".join(lines) + "\n"
