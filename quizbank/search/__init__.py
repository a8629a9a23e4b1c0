"""Finding questions from what a learner types, in their own words.

A query becomes a few terms (terms.py); the database ranks the questions about them (postgres.py,
or fallback.py on SQLite); results scoring under a share of the best are cut off, so a vague word
does not list the bank. With the sentence encoder installed, those results are fused with BM25's
(bm25.py) and with the questions nearest in meaning (semantic.py), which also decides when a
query is about nothing the bank holds. highlight.py marks what matched.

A search runs once per request, over every question the user may see, and gives the matching ids
best first (`SearchResults`). The list and each facet's count narrow those same results, so the
relevance floor does not move with the filters and the counts add up to the list.
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    BigIntegerField,
    BooleanField,
    Case,
    F,
    Func,
    IntegerField,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast

from ..caching import bank_version
from . import bm25, encoder, fallback, postgres, semantic
from .highlight import highlight, question_search_fields, snippet
from .terms import MAX_LENGTH, SYNONYMS_PATH, Term, marked_words, search_terms

BIGINT_ARRAY = ArrayField(BigIntegerField())

__all__ = [
    "SearchResults",
    "Term",
    "cached_search_results",
    "highlight",
    "question_search",
    "question_search_fields",
    "question_search_results",
    "search_terms",
    "snippet",
]


@dataclass(frozen=True)
class SearchResults:
    """The questions a query found, best first, and the words to mark in them."""

    ids: list[int]
    marked: str

    def only(self, ids: list[int]) -> SearchResults:
        """These results cut to `ids` (some of them, in their order), marking the same words."""
        return SearchResults(ids, self.marked)

    def narrow(self, queryset: QuerySet) -> QuerySet:
        """`queryset` cut to these results, in their order, each annotated with `search_text`
        (what `highlight` and `snippet` mark)."""
        if not self.ids:
            return queryset.none()
        queryset = _with_prompt(queryset).annotate(
            search_text=Value(self.marked, output_field=TextField())
        )
        if connection.vendor == "postgresql":
            # One array parameter however many ids (IN would take one each).
            # Sent as the array's text: a list parameter is converted id by id, twice (Django
            # then psycopg), which cost more than the queries for a broad search.
            text = "{" + ",".join(map(str, self.ids)) + "}"
            ids = Cast(Value(text, output_field=TextField()), BIGINT_ARRAY)
            within = Func(
                F("pk"),
                ids,
                arg_joiner=" = ANY(",
                template="%(expressions)s)",
                output_field=BooleanField(),
            )
            place = Func(ids, F("pk"), function="array_position", output_field=IntegerField())
            return queryset.filter(within).order_by(place.asc())
        order = Case(
            *(When(pk=pk, then=Value(n)) for n, pk in enumerate(self.ids)),
            output_field=IntegerField(),
        )
        return queryset.filter(pk__in=self.ids).order_by(order)


def question_search_results(queryset: QuerySet, text: str) -> SearchResults | None:
    """The questions of `queryset` about `text`, best first; None when `text` holds no letter or
    digit (no search, not an empty one)."""
    # Folding may lengthen it ("ﬃ": "ffi"); what is read stays within MAX_LENGTH.
    text = plain_text(text)[:MAX_LENGTH]
    terms = search_terms(text)
    if not terms:
        # Only filler ("what is the difference") finds nothing, and so do words of a script the
        # bank is not written in ("градиент"); no letter or digit at all ("?!") is no search.
        return SearchResults([], "") if any(c.isalnum() for c in text) else None
    python = settings.SEARCH_RANKER == "python" or connection.vendor != "postgresql"
    backend = fallback if python else postgres
    mode = settings.SEARCH_SEMANTIC
    if mode == "only":
        similar = semantic.similarities(queryset, text)
        if similar is not None:
            return SearchResults(semantic.semantic_only(similar), "")
    # The query's meaning is computed in a scoring thread while the database ranks its words.
    # Without the encoder (its files not installed), full text alone (health: "search"): its word
    # rules, not meaning, keep off-topic queries out.
    pending = None
    if mode not in ("off", "words", "only"):
        pending = semantic.start_similarities(queryset, text)
    read = list(terms)
    ids, terms = backend.ranked(queryset.order_by(), terms, text)
    if mode == "words":
        return SearchResults(bm25.ranked(queryset, read, 10), marked_words(read))
    if pending is not None:
        words = bm25.ranked(queryset, read, semantic.CANDIDATES)
        ids = semantic.fuse(ids, words, pending(), read)
        terms = read
    return SearchResults(ids, marked_words(terms))


def cached_search_results(queryset: QuerySet, text: str) -> SearchResults | None:
    """`question_search_results`, kept in the shared cache for SEARCH_RESULTS_CACHE seconds (0:
    never): the same words searched again (the next page, a filter ticked, another learner typing
    them) reuse the ranking instead of running it again. The key holds the bank version (a write
    to the bank is never answered from before it), the questions searched (staff and learners
    see different ones), how search ranks (settings, the encoder's presence) and the search
    code itself (a deploy that ranks differently never reads the old results)."""
    timeout = settings.SEARCH_RESULTS_CACHE
    if not timeout:
        return question_search_results(queryset, text)
    key = _results_key(queryset, text)
    found = cache.get(key)
    if isinstance(found, SearchResults):
        return found
    results = question_search_results(queryset, text)
    if results is not None:
        cache.set(key, results, timeout)
    return results


def _results_key(queryset: QuerySet, text: str) -> str:
    sql, params = queryset.values("pk").query.sql_with_params()
    parts = (
        sql,
        repr(params),
        text,
        settings.SEARCH_SEMANTIC,
        settings.SEARCH_RANKER,
        connection.vendor,
        # Whether meaning ranks too (full text alone without the encoder's files); the encoder
        # is not loaded for a ranking that does not use it.
        settings.SEARCH_SEMANTIC not in ("off", "words") and encoder.encoder() is not None,
        _code_fingerprint(),
    )
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()
    return f"quizbank:search:{bank_version()}:{digest[:40]}"


@functools.cache
def _code_fingerprint() -> str:
    """A digest of this package's code, its word lists and the synonyms file: what a search's
    results depend on besides the bank's rows and the settings."""
    digest = hashlib.sha256()
    files = [p for p in sorted(Path(__file__).parent.iterdir()) if p.suffix in (".py", ".txt")]
    for path in [*files, SYNONYMS_PATH]:
        if path.is_file():
            digest.update(path.name.encode() + b"\x00" + path.read_bytes())
    return digest.hexdigest()


def plain_text(text: str) -> str:
    """`text` with its compatibility forms and accents folded: full-width letters and ligatures
    read as the letters they draw ("ｄｒｏｐｏｕｔ", "ﬁne-tune"), an accented letter as its base
    ("régularisation"). The bank is written in plain letters."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def question_search(queryset: QuerySet, text: str) -> QuerySet:
    """`queryset` narrowed to the questions about `text`, best first, each annotated with
    `search_text`."""
    results = question_search_results(queryset, text)
    return queryset if results is None else results.narrow(queryset)


def _with_prompt(queryset: QuerySet) -> QuerySet:
    """The snippet is cut from the prompt, which list rows otherwise leave out."""
    names, deferring = queryset.query.deferred_loading
    if deferring and "prompt" in names:
        return queryset.defer(None).defer(*(set(names) - {"prompt"}))
    return queryset
