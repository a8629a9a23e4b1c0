"""Finding questions from what a learner types, in their own words.

A query becomes a few *terms*, each something the learner asked about:
- a PyTorch name (`zero_grad`, `model.eval()`, `nn.Module`) is one term, searched as a phrase of
  its parts (the index splits names the same way, migration 0005), and weighs double;
- a phrase from fixtures/bank/synonyms.yaml ("out of memory", "multi gpu") is one term that matches
  any phrase of its group ("OOM", "DataParallel", "DDP"), and weighs double as a name does;
- any other word is a term, unless it is a stop word or interview filler (explain, difference,
  why, implement, example, ...), which say how a question is asked, not what it is about.

On PostgreSQL a question matches when it holds more than half of the terms (by weight) in its
title, concepts or prompt; a term in the title or concepts scores more than one in the prompt, then
`ts_rank_cd` (proximity) and the trigram similarity of the title to the query order the rest.
Results scoring under a share of the best are cut off, so a vague word does not list the bank. A
misspelt word is also searched as the nearest word of a title, concept or slug (pg_trgm). Only when
no question is about the terms at all do answers come in: those holding every term.
Elsewhere (the SQLite development default): substring matches of the same terms, scored by the
same field weights and cut off the same way, without typo correction.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import (
    Case,
    F,
    FloatField,
    Func,
    Max,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
    Window,
)
from django.db.models.functions import Cast, Lower

MAX_LENGTH = 300
MAX_TERMS = 12
NAME_WEIGHT = 2.0
# A question must hold more than this share of the query's terms (by weight), a little less of a
# long pasted question's...
MIN_COVERAGE = 0.5
MIN_COVERAGE_LONG = 0.4
LONG_QUERY_TERMS = 4
# ...and score at least this share of the best match.
MIN_SHARE_OF_BEST = 0.45
# ...and hold enough of them in its title, concepts or slug (a term only in the prompt counts 0.4).
MIN_SCORE = 0.3
# pg_trgm similarity from which a word that no title, concept or slug holds is read as a typo.
TYPO_SIMILARITY = 0.3
SYNONYMS_PATH = Path(settings.BASE_DIR) / "fixtures" / "bank" / "synonyms.yaml"

NAME_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+(?:\(\))?|[a-z0-9]+(?:_[a-z0-9]+)+")
WORD_RE = re.compile(r"[a-z0-9]+")
# A tsquery as PostgreSQL prints one from plain words: quoted lexemes joined by phrase operators.
TSQUERY_RE = re.compile(r"'[a-z0-9]+'(?: <(?:-|\d+)> '[a-z0-9]+')*")
NAME_PREFIXES = ("torch.nn.functional.", "torch.nn.", "torch.", "nn.functional.", "nn.", "f.")

FUNCTION_WORDS = frozenset(
    "a an and are as at be been being but by can could did do does doing for from had has have"  # noqa: SIM905 - reads as words
    " how i if in into is it its me my myself no not of on once only or our out over should so"
    " some such than that the their them then there these they this those through to too under"
    " until up very was we were what when where which while who whom why will with would you your"
    " yours about anything something every each any all other more most much many still always"
    " ever".split()
)
# How interview questions are asked rather than what they are about. Searched only when a query
# holds nothing else ("what is pytorch").
FILLER = frozenset(
    "vs versus between difference differences different compare comparison explain describe"  # noqa: SIM905 - reads as words
    " discuss tell give show example examples important importance implement implementing"
    " implementation write writing code use using used way ways work works working mean means"
    " meaning purpose role concept understand understanding need needed happen happens typically"
    " usually commonly common best good better simple main key really exactly actually also just"
    " get getting make makes one two pytorch torch question interview walk please help want know"
    " thing things python pythonic create compute calculate deal handle problem problems"
    " advantages advantage benefits turn turned off time times default".split()
)
STOP_WORDS = FUNCTION_WORDS | FILLER


@dataclass
class Term:
    """One thing the learner asked about, and the phrases that say it."""

    phrases: list[str]
    weight: float = 1.0
    fixable: bool = False  # a single word that may be misspelt
    queries: list[str] = field(default_factory=list)  # tsquery texts, filled on PostgreSQL


@functools.cache
def synonym_groups() -> dict[str, tuple[str, ...]]:
    """Each phrase of fixtures/bank/synonyms.yaml, normalised, mapped to its whole group."""
    groups: dict[str, tuple[str, ...]] = {}
    if not SYNONYMS_PATH.exists():
        return groups
    for group in yaml.safe_load(SYNONYMS_PATH.read_text(encoding="utf-8")) or []:
        phrases = tuple(dict.fromkeys(_normalise(str(p)) for p in group))
        for phrase in phrases:
            groups[phrase] = tuple(dict.fromkeys(groups.get(phrase, ()) + phrases))
    return groups


def _normalise(text: str) -> str:
    return " ".join(WORD_RE.findall(text.lower()))


def _name_phrases(name: str) -> list[str]:
    name = name.removesuffix("()")
    for prefix in NAME_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
            break
    phrases = [_normalise(name)]
    if "." in name:  # model.eval(): also the method alone ("eval"), as a learner may write it
        last = _normalise(name.rsplit(".", 1)[1])
        if len(last) >= 4 and last not in STOP_WORDS:
            phrases.append(last)
    return [p for p in dict.fromkeys(phrases) if p]


def search_terms(text: str) -> list[Term]:
    """What the learner asked about, in the order they typed it."""
    text = text.lower()[:MAX_LENGTH]
    terms: list[Term] = []
    for match in NAME_RE.finditer(text):
        phrases = _name_phrases(match.group())
        synonyms = synonym_groups().get(phrases[0]) if phrases else None
        if synonyms:
            terms.append(Term(list(synonyms), weight=NAME_WEIGHT))
        elif phrases:
            terms.append(Term(phrases, weight=NAME_WEIGHT))
    words = WORD_RE.findall(NAME_RE.sub(" ", text))
    # A query of filler only ("what is pytorch") is searched for its filler.
    words_left = set(words) if not terms and all(w in STOP_WORDS for w in words) else set[str]()
    groups = synonym_groups()
    longest = max((len(p.split()) for p in groups), default=1)
    i = 0
    while i < len(words):
        for size in range(min(longest, len(words) - i), 0, -1):
            phrase = " ".join(words[i : i + size])
            if phrase in groups:
                terms.append(Term(list(groups[phrase]), weight=NAME_WEIGHT))
                i += size
                break
        else:
            word = words[i]
            i += 1
            if (word not in STOP_WORDS or word in FILLER and word in words_left) and (
                len(word) > 1 or word.isdigit()
            ):
                terms.append(Term([word], fixable=len(word) >= 4 and not word.isdigit()))
    unique: dict[tuple[str, ...], Term] = {}
    for term in terms:
        unique.setdefault(tuple(term.phrases), term)
    return list(unique.values())[:MAX_TERMS]


def question_search(queryset: QuerySet, text: str) -> QuerySet:
    """`queryset` narrowed to the questions about `text`, best first, each annotated with `rank`
    and with `search_text` (what `highlight` and `snippet` mark)."""
    terms = search_terms(text)
    if not terms:
        if WORD_RE.search(text.lower()):  # only filler ("what is the difference"): nothing to find
            return queryset.none()
        return queryset
    queryset = _with_prompt(queryset)
    if connection.vendor == "postgresql":
        return _postgres_search(queryset, terms)
    return _fallback_search(queryset, terms)


def _with_prompt(queryset: QuerySet) -> QuerySet:
    """The snippet is cut from the prompt, which list rows otherwise leave out."""
    names, deferring = queryset.query.deferred_loading
    if deferring and "prompt" in names:
        return queryset.defer(None).defer(*(set(names) - {"prompt"}))
    return queryset


def _marked_words(terms: list[Term]) -> str:
    return " ".join(dict.fromkeys(w for t in terms for p in t.phrases for w in p.split()))


def _prepare(terms: list[Term]) -> None:
    """Fill each term's tsquery texts, one round trip: every phrase as PostgreSQL's English
    configuration reads it, and for a word no title, concept or slug holds, the nearest one."""
    phrases = [(n, p) for n, t in enumerate(terms) for p in t.phrases]
    fixable = [t.fixable for t in terms]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.n, phraseto_tsquery('english', quizbank_search_text(a.phrase))::text,
                   CASE WHEN a.fix AND NOT EXISTS (
                       SELECT 1 FROM quizbank_searchterm e WHERE e.word = a.phrase)
                   THEN (SELECT array_agg(
                             c.word || ' ' || phraseto_tsquery('english', c.word)::text)
                         FROM (SELECT t.word FROM quizbank_searchterm t
                               WHERE t.word %% a.phrase AND similarity(t.word, a.phrase) >= %s
                               ORDER BY similarity(t.word, a.phrase) DESC, t.word LIMIT 5) c)
                   END, a.phrase
            FROM unnest(%s::int[], %s::text[], %s::boolean[]) AS a(n, phrase, fix)
            """,
            [
                TYPO_SIMILARITY,
                [n for n, _ in phrases],
                [p for _, p in phrases],
                [fixable[n] for n, _ in phrases],
            ],
        )
        for n, query, candidates, phrase in cursor.fetchall():
            fixed = next(
                (
                    c.split(" ", 1)[1]
                    for c in candidates or []
                    if _is_typo(phrase, c.split(" ", 1)[0])
                ),
                None,
            )
            for tsquery in (query, fixed):
                # Built from [a-z0-9] words, so always this shape; checked anyway, as it is
                # pasted into a raw tsquery below.
                if tsquery and TSQUERY_RE.fullmatch(tsquery):
                    terms[n].queries.append(tsquery)


def _is_typo(typed: str, word: str) -> bool:
    """Whether `typed` reads as a misspelling of `word`: same first letter, and one edit away
    (two for a long word), a swap of neighbours counting as one."""
    if typed[:1] != word[:1]:
        return False
    limit = 1 if len(typed) <= 6 else 2
    if abs(len(typed) - len(word)) > limit:
        return False
    previous, row = None, list(range(len(word) + 1))
    for i, a in enumerate(typed, 1):
        current = [i]
        for j, b in enumerate(word, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a != b))
            if previous and i > 1 and j > 1 and a == word[j - 2] and typed[i - 2] == b:
                cost = min(cost, previous[j - 2] + 1)
            current.append(cost)
        previous, row = row, current
    return row[-1] <= limit


def _raw(queries: list[str], weights: str = "") -> SearchQuery:
    if weights:
        queries = [re.sub(r"'([a-z0-9]+)'", rf"'\1':{weights}", q) for q in queries]
    return SearchQuery(" | ".join(f"( {q} )" for q in queries), search_type="raw", config="simple")


def _min_coverage(terms: list[Term]) -> float:
    share = MIN_COVERAGE_LONG if len(terms) >= LONG_QUERY_TERMS else MIN_COVERAGE
    return share * sum(t.weight for t in terms) - 1e-9 * (len(terms) >= LONG_QUERY_TERMS)


def _postgres_search(queryset: QuerySet, terms: list[Term]) -> QuerySet:
    _prepare(terms)
    terms = [t for t in terms if t.queries]  # terms of stop words only ("no")
    if not terms:
        return queryset.none()
    total = sum(t.weight for t in terms)
    any_term = _raw([q for t in terms for q in t.queries])
    about = queryset.filter(search_vector=any_term)
    marked = Value(_marked_words(terms), output_field=TextField())
    if not about.exists():
        # Nothing is about these terms: fall back to answers that hold every one of them.
        # Answers are large (their vectors are TOASTed), so they are only searched when needed.
        every = Q()
        for term in terms:
            every &= Q(answer_vector=_raw(term.queries))
        return (
            queryset.filter(every)
            .annotate(rank=Value(0.0, output_field=FloatField()), search_text=marked)
            .order_by("slug")
        )
    coverage: Any = Value(0.0, output_field=FloatField())
    score: Any = Value(0.0, output_field=FloatField())
    for term in terms:
        coverage += Case(
            When(search_vector=_raw(term.queries), then=Value(term.weight)),
            default=Value(0.0),
            output_field=FloatField(),
        )
        score += Case(
            When(search_vector=_raw(term.queries, "AB"), then=Value(term.weight)),
            When(search_vector=_raw(term.queries), then=Value(term.weight * 0.4)),
            default=Value(0.0),
            output_field=FloatField(),
        )
    query_text = Value(" ".join(p for t in terms for p in t.phrases[:1]))
    rank = (
        score / total
        + SearchRank(
            F("search_vector"),
            any_term,
            weights=[0.1, 0.2, 0.6, 1.0],
            cover_density=True,
            normalization=Value(32),
        )
        + Func(Lower("title"), query_text, function="similarity", output_field=FloatField())
    )
    return (
        about.alias(coverage=coverage, score=score)
        .filter(coverage__gt=_min_coverage(terms), score__gte=MIN_SCORE * total)
        .annotate(rank=rank)
        .alias(best=Window(Max("rank")))
        .filter(rank__gte=F("best") * MIN_SHARE_OF_BEST)
        .annotate(search_text=marked)
        .order_by("-rank", "slug")
    )


def _fallback_search(queryset: QuerySet, terms: list[Term]) -> QuerySet:
    total = sum(t.weight for t in terms)
    coverage: Any = Value(0.0, output_field=FloatField())
    score: Any = Value(0.0, output_field=FloatField())
    for term in terms:
        stems = [_stem(p) for p in term.phrases]
        fields = {}
        for name in ("title", "concepts_text", "slug", "prompt"):
            found = Q()
            for stem in stems:
                found |= Q(**{f"{name}__icontains": stem})
            fields[name] = found
        head = fields["title"] | fields["concepts_text"] | fields["slug"]
        coverage += Case(
            When(head | fields["prompt"], then=Value(term.weight)),
            default=Value(0.0),
            output_field=FloatField(),
        )
        score += Case(
            When(fields["title"], then=Value(term.weight * 1.2)),
            When(head, then=Value(term.weight)),
            When(fields["prompt"], then=Value(term.weight * 0.4)),
            default=Value(0.0),
            output_field=FloatField(),
        )
    return (
        queryset.annotate(concepts_text=Cast("concepts", TextField()))
        .alias(coverage=coverage, score=score)
        .filter(coverage__gt=_min_coverage(terms), score__gte=MIN_SCORE * total)
        .annotate(rank=score / total)
        .alias(best=Window(Max("rank")))
        .filter(rank__gte=F("best") * MIN_SHARE_OF_BEST)
        .annotate(search_text=Value(_marked_words(terms), output_field=TextField()))
        .order_by("-rank", "slug")
    )


SUFFIXES = (
    "izations",
    "isations",
    "ization",
    "isation",
    "ations",
    "ation",
    "ings",
    "ing",
    "es",
    "e",
)


def _stem(phrase: str) -> str:
    """A crude stem for substring matching and highlighting: "initialization" -> "initializ"."""
    for suffix in SUFFIXES:
        if phrase.endswith(suffix) and len(phrase) - len(suffix) >= 4:
            return phrase[: -len(suffix)]
    return phrase


# Highlighting: escape first, then mark, so nothing the bank holds becomes markup.

MARK_WORD_RE = re.compile(r"[A-Za-z0-9]+")
SNIPPET_LENGTH = 160


def _marks(text: str, words: list[str]) -> list[tuple[int, int]]:
    stems = tuple(_stem(w) for w in words if len(w) >= 2)
    return [
        (m.start(), m.end())
        for m in MARK_WORD_RE.finditer(text)
        if stems and m.group().lower().startswith(stems)
    ]


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
    """`title_html` and `snippet` of a question from a search (empty snippet otherwise)."""
    marked = getattr(question, "search_text", None)
    if not marked:
        return {"title_html": html.escape(question.title), "snippet": ""}
    prompt = question.__dict__.get("prompt") or ""
    return {"title_html": highlight(question.title, marked), "snippet": snippet(prompt, marked)}
