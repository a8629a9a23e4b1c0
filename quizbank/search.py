"""Finding questions from what a learner types, in their own words.

On PostgreSQL: full-text search over a trigger-maintained tsvector (title A > prompt B >
concepts C > answer D, English stemming). A question matches when any of the learner's words is
in its title, prompt or concepts, or all of them are anywhere, so a question phrased differently
still matches; those matching more of the words come first, then ts_rank (weightier fields first).
Elsewhere (the SQLite development default): case-insensitive substring matches, scored by the same
weights.
"""

from __future__ import annotations

import re

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import Case, F, IntegerField, QuerySet, TextField, Value, When
from django.db.models.functions import Cast

WORD_RE = re.compile(r"[a-z0-9]+")
MAX_WORDS = 16
# Only for the fallback; PostgreSQL's English configuration has its own list.
STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
        "vs",
        "versus",
        "between",
        "difference",
        "explain",
        "pytorch",
        "torch",
    }
)


def search_words(text: str) -> list[str]:
    words = WORD_RE.findall(text.lower())
    return list(dict.fromkeys(words))[:MAX_WORDS]


def question_search(queryset: QuerySet, text: str) -> QuerySet:
    words = search_words(text)
    if not words:
        return queryset
    if connection.vendor == "postgresql":
        # A question matches when one of the words is in what it is about (title, prompt or
        # concepts) or all of them are somewhere, its answer included. Words are [a-z0-9]+ only,
        # so they cannot inject tsquery operators.
        about = " | ".join(f"{w}:ABC" for w in words)
        query = SearchQuery(f"{about} | ({' & '.join(words)})", search_type="raw", config="english")
        # ts_rank alone lets one common word in a title beat a question that matches most of what
        # was typed; counting the distinct words matched first puts coverage before weight.
        coverage = Value(0, output_field=IntegerField())
        for word in words:
            coverage = coverage + Case(
                When(
                    search_vector=SearchQuery(f"{word}:ABC", search_type="raw", config="english"),
                    then=Value(1),
                ),
                default=Value(0),
                output_field=IntegerField(),
            )
        rank_query = SearchQuery(" | ".join(words), search_type="raw", config="english")
        return (
            queryset.filter(search_vector=query)
            .annotate(coverage=coverage, rank=SearchRank(F("search_vector"), rank_query))
            .order_by("-coverage", "-rank", "slug")
        )
    words = [w for w in words if w not in STOP_WORDS and len(w) > 1] or words
    score = Value(0, output_field=IntegerField())
    for word in words:
        for field, weight in (("title", 8), ("prompt", 4), ("concepts_text", 2), ("answer", 1)):
            score = score + Case(
                When(**{f"{field}__icontains": word}, then=Value(weight)),
                default=Value(0),
                output_field=IntegerField(),
            )
    return (
        queryset.annotate(concepts_text=Cast("concepts", TextField()))
        .annotate(rank=score)
        .filter(rank__gt=0)
        .order_by("-rank", "slug")
    )
