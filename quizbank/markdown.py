"""Markdown for the bank's text: CommonMark via markdown-it-py, code highlighted by Pygments, and
the HTML sanitised by nh3 (content is staff-written, but a sanitiser makes a mistake harmless)."""

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
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


_MD = MarkdownIt("commonmark", {"highlight": _highlight, "html": False}).enable("table")

_TAGS = nh3.ALLOWED_TAGS | {"pre", "code", "span", "table", "thead", "tbody", "tr", "th", "td"}
_ATTRIBUTES = {**nh3.ALLOWED_ATTRIBUTES, "span": {"class"}, "code": {"class"}, "pre": {"class"}}


@lru_cache(maxsize=1024)
def render_markdown(text: str) -> str:
    return nh3.clean(_MD.render(text), tags=_TAGS, attributes=_ATTRIBUTES)


def pygments_css() -> str:
    return HtmlFormatter().get_style_defs(".highlight")
