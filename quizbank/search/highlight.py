"""Marking what a search matched: the words in a title, and the prompt's sentence that holds most of
them. Escape first, then mark, so nothing the bank holds becomes markup."""

from __future__ import annotations

import functools
import html
import re
from typing import Any

from .terms import FUNCTION_WORDS, stem

SNIPPET_LENGTH = 160


# A stem this short marks only itself (and its plural): "nan" is not the start of "nanny", and
# "not" (of the synonym "not a number") must not mark "nothing".
SHORT_STEM = 3


@functools.lru_cache(maxsize=256)
def _word_re(words: tuple[str, ...]) -> re.Pattern[str] | None:
    """Whole words of a text that start with the stem of one of `words` (or are a short one),
    compiled once per search (a list of 20 rows marks a few hundred sentences with the same
    words). A function word ("not", "a") is never marked on its own."""
    stems = {stem(w) for w in words if len(w) >= 2 and w.lower() not in FUNCTION_WORDS}
    if not stems:
        return None
    by_length = sorted(stems, key=len, reverse=True)
    alternatives = "|".join(
        re.escape(s) + ("s?(?![A-Za-z0-9])" if len(s) <= SHORT_STEM else "[A-Za-z0-9]*")
        for s in by_length
    )
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})", re.IGNORECASE | re.ASCII)


def _marks(text: str, words: list[str]) -> list[tuple[int, int]]:
    pattern = _word_re(tuple(words))
    return [m.span() for m in pattern.finditer(text)] if pattern else []


def _mark(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in spans:
        out += [html.escape(text[at:start]), "<mark>", html.escape(text[start:end]), "</mark>"]
        at = end
    out.append(html.escape(text[at:]))
    return "".join(out)


def highlight(text: str, search_text: str) -> str:
    """`text` as safe HTML with the searched words in <mark>."""
    return _mark(text, _marks(text, search_text.split()))


def snippet(text: str, search_text: str) -> str:
    """The sentence of `text` (a question's prompt) that holds most searched words, as one line of
    safe HTML with them marked; empty when none does."""
    prose = re.sub(r"```.*?```", " ", text, flags=re.S)
    words = search_text.split()
    best, best_marks = "", 0
    for sentence in re.split(r"(?<=[.?!:])\s+|\n\s*\n", prose):
        sentence = " ".join(sentence.replace("`", "").split())
        found = len({sentence[s:e].lower() for s, e in _marks(sentence, words)})
        if found > best_marks:
            best, best_marks = sentence, found
    if not best:
        return ""
    if len(best) > SNIPPET_LENGTH:
        first = _marks(best, words)[0][0]
        start = max(0, min(first - 40, len(best) - SNIPPET_LENGTH))
        best = ("…" if start else "") + best[start : start + SNIPPET_LENGTH].strip() + "…"
    return _mark(best, _marks(best, words))


def question_search_fields(question: Any) -> dict[str, str]:
    """`title_html` and `snippet` of a question from a search (empty snippet otherwise), worked
    out once per row however many fields read them."""
    fields = question.__dict__.get("_search_fields")
    if fields is None:
        marked = getattr(question, "search_text", None)
        if not marked:
            fields = {"title_html": html.escape(question.title), "snippet": ""}
        else:
            prompt = question.__dict__.get("prompt") or ""
            fields = {
                "title_html": highlight(question.title, marked),
                "snippet": snippet(prompt, marked),
            }
        question.__dict__["_search_fields"] = fields
    return fields
