"""Finding questions from what a learner types, in their own words.

On PostgreSQL: full-text search over a trigger-maintained tsvector (title A > prompt B >
concepts C > answer D, English stemming). A question matches when any of the learner's words is
in its title, prompt or concepts, so a question phrased differently still matches; those matching
more of the words come first, then ts_rank (title > prompt > concepts). Only when no question is
about any of the words do answers come in: those containing all of them.
Elsewhere (the SQLite development default): case-insensitive substring matches, scored by the same
weights.
"""

from __future__ import annotations

import re
from typing import Any

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
        return _postgres_search(queryset, words)
    words = [w for w in words if w not in STOP_WORDS and len(w) > 1] or words
    score: Any = Value(0, output_field=IntegerField())
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


def _lexemes(words: list[str]) -> list[str]:
    """The learner's words as PostgreSQL's English configuration indexes them: stemmed, without
    stop words, so each costs one test per row rather than a parse."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector('english', %s)) ORDER BY lexeme",
            [" ".join(words)],
        )
        return [row[0] for row in cursor.fetchall()]


def _postgres_search(queryset: QuerySet, words: list[str]) -> QuerySet:
    # Lexemes are [a-z0-9]+ words after stemming, so they cannot inject tsquery operators; quoting
    # them keeps the 'simple' configuration from touching them again.
    lexemes = [lexeme for lexeme in _lexemes(words) if WORD_RE.fullmatch(lexeme)]
    if not lexemes:
        return queryset.none()

    def query(operator: str) -> SearchQuery:
        text = f" {operator} ".join(f"'{lexeme}'" for lexeme in lexemes)
        return SearchQuery(text, search_type="raw", config="simple")

    any_word = query("|")
    about = queryset.filter(search_vector=any_word)
    if not about.exists():
        # Nothing is about these words: fall back to answers that contain every one of them.
        # Answers are large (their vectors are TOASTed), so they are only searched when needed.
        return queryset.filter(answer_vector=query("&")).order_by("slug")
    # ts_rank alone lets one common word in a title beat a question that matches most of what
    # was typed; counting the distinct words matched first puts coverage before weight.
    coverage: Any = Value(0, output_field=IntegerField())
    for lexeme in lexemes:
        coverage = coverage + Case(
            When(
                search_vector=SearchQuery(f"'{lexeme}'", search_type="raw", config="simple"), then=1
            ),
            default=0,
            output_field=IntegerField(),
        )
    return about.annotate(
        coverage=coverage, rank=SearchRank(F("search_vector"), any_word)
    ).order_by("-coverage", "-rank", "slug")
