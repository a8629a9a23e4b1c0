"""Ranking on PostgreSQL: tsvector matches, `ts_rank`, proximity and pg_trgm.

A question matches when it holds more than a share of the terms (by weight) in its title, concepts
or prompt. That rule is written as one tsquery (any big enough set of terms, each set AND-ed), so
the GIN index finds exactly the questions that pass it, and only those are scored: a query with a
common word ("high") no longer scores half the bank to keep a few hundred. Each is scored once, in
one query that also cuts off and orders: a term in the title or concepts counts more than one in
the prompt, two terms typed side by side count more where they stand together, then `ts_rank`
and the trigram similarity of the title to the query. A word no title, concept or slug holds is
also searched as the compound the bank writes apart, or as the title word it misspells (pg_trgm).
Only when no question is about the terms at all do answers come in: those holding every term.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from django.contrib.postgres.search import SearchQuery
from django.db import connection
from django.db.models import Exists, FloatField, Q, QuerySet
from django.db.models.expressions import RawSQL

from .terms import (
    MAX_LENGTH,
    MIN_SCORE,
    MIN_SHARE_OF_BEST,
    PROXIMITY_WEIGHT,
    WORD_RE,
    Term,
    is_typo,
    min_coverage,
    weigh_foreign,
)

# pg_trgm similarity from which a word that no title, concept or slug holds is read as a typo.
TYPO_SIMILARITY = 0.3
# The longest word read as a compound of two (a bound the planner can see).
MAX_COMPOUND = 24
# A tsquery as PostgreSQL prints one from plain words: quoted lexemes joined by phrase operators.
LEXEME = r"'[a-z0-9]+(?:-[a-z0-9]+)*'"
TSQUERY_RE = re.compile(rf"{LEXEME}(?: <(?:-|\d+)> {LEXEME})*")
# Past this many sets of terms the candidates' tsquery is "any term", and the coverage is checked
# row by row instead (a 12-word pasted question: 792 sets).
MAX_TERM_SETS = 80


def prepare(terms: list[Term]) -> None:
    """Fill each term's tsquery texts, one round trip: every phrase as PostgreSQL's English
    configuration reads it, and for a word no title, concept or slug holds, the nearest one."""
    phrases = [(n, p) for n, t in enumerate(terms) for p in t.phrases]
    # A plain word may be a slip, and so may one word of a name ("autograd.Fucntion").
    fixable = [
        terms[n].fixable or (not terms[n].plain and p.isalpha() and len(p) >= 5) for n, p in phrases
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.n, phraseto_tsquery('english', quizbank_search_text(a.phrase))::text,
                   CASE WHEN a.absent AND a.fix AND NOT a.used
                   THEN (SELECT array_agg(
                             c.word || ' ' || phraseto_tsquery('english', c.word)::text)
                         FROM (SELECT t.word FROM quizbank_searchterm t
                               WHERE t.word %% a.phrase AND similarity(t.word, a.phrase) >= %s
                               ORDER BY similarity(t.word, a.phrase) DESC, t.word LIMIT 5) c)
                   END, a.phrase, a.unknown, a.unknown AND NOT a.used,
                   -- a compound the bank writes as two words ("allreduce": "all-reduce")
                   CASE WHEN a.absent AND a.plain AND NOT a.used AND length(a.phrase) >= 6
                   THEN (SELECT v.q::text
                         FROM generate_series(2, %s) AS i,
                              LATERAL (VALUES
                                  (phraseto_tsquery('english',
                                      left(a.phrase, i) || '-' || substr(a.phrase, i + 1))),
                                  (phraseto_tsquery('english',
                                      left(a.phrase, i) || ' ' || substr(a.phrase, i + 1)))
                              ) AS v(q)
                         WHERE i <= length(a.phrase) - 2 AND numnode(v.q) >= 3 AND EXISTS (
                             SELECT 1 FROM quizbank_question q WHERE q.search_vector @@ v.q)
                         ORDER BY abs(length(a.phrase) - 2 * i) LIMIT 1)
                   END
            FROM (SELECT b.*, b.absent AND (b.fix OR b.unknown) AND (
                              -- a prompt or an answer uses it: a word, not a slip (one
                              -- EXISTS per vector, so that each is an index lookup)
                              EXISTS (SELECT 1 FROM quizbank_question q WHERE q.search_vector
                                      @@ phraseto_tsquery('english', b.phrase))
                              OR EXISTS (SELECT 1 FROM quizbank_question q WHERE q.answer_vector
                                         @@ phraseto_tsquery('english', b.phrase))) AS used
                  FROM (SELECT c.*, c.absent AND c.plain AND length(c.phrase) >= 4
                                -- nor a form of it ("freezing": "freeze"), by its English stem
                                AND NOT EXISTS (
                                    SELECT 1 FROM quizbank_searchterm e WHERE e.word LIKE btrim(
                                        phraseto_tsquery('english', c.phrase)::text, '''') || '%%')
                                AS unknown
                        FROM (SELECT u.*, NOT EXISTS (
                                  SELECT 1 FROM quizbank_searchterm e WHERE e.word = u.phrase)
                                  AS absent
                              FROM unnest(%s::int[], %s::text[], %s::boolean[], %s::boolean[])
                                   AS u(n, phrase, fix, plain)) c) b) a
            """,
            [
                TYPO_SIMILARITY,
                MAX_COMPOUND - 2,
                [n for n, _ in phrases],
                [p for _, p in phrases],
                fixable,
                [terms[n].plain for n, _ in phrases],
            ],
        )
        seen: set[int] = set()
        for n, query, candidates, phrase, unknown, unused, compound in cursor.fetchall():
            fixed = compound or next(
                (
                    c.split(" ", 1)[1]
                    for c in candidates or []
                    if is_typo(phrase, c.split(" ", 1)[0])
                ),
                None,
            )
            # No title, concept or slug of the bank uses this word (in any spelling), nor one it
            # misspells: the query is (also) about something the bank does not cover (terms.py,
            # FOREIGN_WEIGHT).
            first = n not in seen
            seen.add(n)
            foreign = bool(unknown) and fixed is None and (first or terms[n].foreign)
            terms[n].foreign = foreign
            terms[n].unused = foreign and bool(unused) and (first or terms[n].unused)
            if fixed:
                # Lexemes are stems ("reduc"), which highlight.py marks as word prefixes.
                # (Operators' digits, as in <2>, are shorter than any word kept.)
                terms[n].marks += [w for w in re.findall(r"[a-z0-9]+", fixed) if len(w) >= 4]
            for tsquery in (query, fixed):
                # Built from [a-z0-9-] words, so always this shape; checked anyway, as it is
                # pasted into a raw tsquery below.
                # Two phrases may read the same ("learning rate", "learning rates"): each
                # repeat would be matched and ranked again.
                if tsquery and TSQUERY_RE.fullmatch(tsquery) and tsquery not in terms[n].queries:
                    terms[n].queries.append(tsquery)


def _text(queries: list[str], weights: str = "") -> str:
    if weights:
        queries = [re.sub(f"({LEXEME})", rf"\1:{weights}", q) for q in queries]
    return " | ".join(f"( {q} )" for q in queries)


class TsQuery(SearchQuery):
    """A tsquery's text taken as it is (`'a' <-> 'b'`), not through to_tsquery(): its lexemes are
    PostgreSQL's own already (TSQUERY_RE), and the parser would split a compound one
    ('all-reduc') into parts that the vector does not hold in that order."""

    template = "(%(expressions)s)::tsquery"

    def __init__(self, text: str) -> None:
        super().__init__(text, search_type="raw")
        self.function = None


def _raw(text: str) -> TsQuery:
    return TsQuery(text)


def term_sets(terms: list[Term]) -> list[tuple[int, ...]] | None:
    """The smallest sets of terms (by index) that a question may hold and match: every set
    whose weight passes the coverage, none of whose subsets does. None when there are too many to
    write as one tsquery."""
    floor = min_coverage(terms)
    sets: list[tuple[int, ...]] = []
    # A word the bank never uses (terms.py) cannot be held: sets with it are left out.
    known = [i for i, t in enumerate(terms) if not t.unused]
    for size in range(1, len(known) + 1):
        for chosen in itertools.combinations(known, size):
            if sum(terms[i].weight for i in chosen) <= floor:
                continue
            if any(set(smaller) <= set(chosen) for smaller in sets):
                continue
            sets.append(chosen)
            if len(sets) > MAX_TERM_SETS:
                return None
    return sets


def _weighed(vector: str, cases: list[list[tuple[str, float]]]) -> tuple[str, list[Any]]:
    """SQL summing, for each item of `cases`, the weight of its first tsquery that `vector`
    matches (each item a CASE, its tsqueries tried in order), and its parameters. Written as SQL
    text, not as Django's Case and When: a pasted question's dozens of them took milliseconds to
    resolve and compile, before the query was even sent. Weights are summed as numeric (exact
    decimals, as the weights' literals always were), so a score at the coverage floor is not
    nudged across it by binary rounding."""
    sums, params = ["0.0"], []
    for whens in cases:
        tried = []
        for query, weight in whens:
            tried.append(f"WHEN {vector} @@ %s::tsquery THEN %s::numeric")
            params += [query, weight]
        sums.append(f"CASE {' '.join(tried)} ELSE 0.0 END")
    return f"({' + '.join(sums)})", params


def _title_similarity(table: str, text: str) -> tuple[str, list[Any]]:
    """pg_trgm's similarity of the title to `text`, from the title's stored trigrams (migration
    0008): building them per row cost more than the rest of the ranking."""
    title, query = f"{table}.title_trigrams", "quizbank_trigrams(%s)"
    return (
        f"coalesce((icount({title} & {query})::float8 / nullif("
        f"icount({title}) + icount({query}) - icount({title} & {query}), 0))::real, 0)",
        [text] * 3,
    )


def ranked(queryset: QuerySet, terms: list[Term], text: str) -> tuple[list[int], list[Term]]:
    """The ids of the questions of `queryset` about `terms` (read from `text`), best first, cut
    off under a share of the best (MIN_SHARE_OF_BEST), and the terms PostgreSQL could search (not
    those of its own stop words only)."""
    prepare(terms)
    weigh_foreign(terms)
    terms = [t for t in terms if t.queries]
    if not terms:
        return [], terms
    total = sum(t.weight for t in terms)
    any_term = _text(list(dict.fromkeys(q for t in terms for q in t.queries)))
    sets = term_sets(terms)
    # The ranking query reads the question table unaliased.
    table = connection.ops.quote_name(queryset.model._meta.db_table)
    vector = f"{table}.{connection.ops.quote_name('search_vector')}"
    # A term in the title or concepts (A, B) counts fully; in the prompt, 0.4 of its weight.
    score = _weighed(
        vector,
        [[(_text(t.queries, "AB"), t.weight), (_text(t.queries), t.weight * 0.4)] for t in terms],
    )
    # Proximity: two terms typed side by side count more where they stand within a word of each
    # other (title, concepts or prompt), as "learning rate warmup" does in a warmup question.
    proximity = _weighed(
        vector,
        [
            [
                (
                    " | ".join(
                        f"( ( {_text(x.queries)} ) <{d}> ( {_text(y.queries)} ) )"
                        for x, y in ((a, b), (b, a))
                        for d in (1, 2)
                    ),
                    PROXIMITY_WEIGHT * min(a.weight, b.weight),
                )
            ]
            for a, b in itertools.pairwise(terms)
        ],
    )
    if sets is not None:
        # The index answers the coverage rule itself: each set of terms AND-ed, the sets OR-ed.
        candidates = " | ".join(
            "( " + " & ".join(f"( {_text(terms[i].queries)} )" for i in chosen) + " )"
            for chosen in sets
        )
        about = queryset.filter(search_vector=_raw(candidates))
    else:
        held = _weighed(vector, [[(_text(t.queries), t.weight)] for t in terms if not t.unused])
        # SQL of ours, every value a parameter.
        coverage = RawSQL(*held, output_field=FloatField())  # noqa: S611
        about = (
            queryset.filter(search_vector=_raw(any_term))
            .alias(coverage=coverage)
            .filter(coverage__gt=min_coverage(terms))
        )
    # The title against all the learner typed, question words too: titles are asked as questions,
    # and a pasted question is closest to the title that asks it the same way.
    query_text = " ".join(WORD_RE.findall(text.lower()[:MAX_LENGTH]))
    similarity = _title_similarity(table, query_text)
    # Not cover density (ts_rank_cd): for a query of terms OR-ed, every occurrence is a cover,
    # so it only counted them, five times slower; proximity is weighed above. Normalization 32
    # (rank / (rank + 1)).
    rank = (
        f"(({score[0]} + {proximity[0]}) / %s::numeric"
        f" + ts_rank('{{0.1,0.2,0.6,1.0}}'::float4[], {vector}, %s::tsquery, 32)"
        f" + {similarity[0]})",
        [*score[1], *proximity[1], total, any_term, *similarity[1]],
    )
    scored = (
        about.alias(score=RawSQL(*score, output_field=FloatField()))  # noqa: S611
        .filter(score__gte=MIN_SCORE * total)
        .annotate(rank=RawSQL(*rank, output_field=FloatField()))  # noqa: S611
        .order_by()
        .values_list("pk", "slug", "rank")
    )
    # The cut-off and the order in the same query: only the ids kept come back, best first. The
    # window runs over the ranked rows, and OFFSET 0 keeps PostgreSQL from pulling them up into
    # it, which would compute each rank once per mention (three times as long for a broad
    # search). The SQL is Django's; every value goes as a parameter.
    sql, params = scored.query.sql_with_params()
    kept = (
        "SELECT r.pk FROM (SELECT s.*, max(s.rank) OVER () AS best"  # noqa: S608
        f" FROM ({sql} OFFSET 0) s) r WHERE r.rank >= r.best * %s"
        ' ORDER BY r.rank DESC, r.slug COLLATE "C"'
    )
    with connection.cursor() as cursor:
        cursor.execute(kept, [*params, MIN_SHARE_OF_BEST])
        ids = [pk for (pk,) in cursor.fetchall()]
    if ids:
        return ids, terms
    # Nothing is about these terms: fall back to answers that hold every one of them, unless a
    # question holds some of them (then nothing matched well enough). Answers are large (their
    # vectors are TOASTed), so they are only searched when needed.
    every = Q()
    for term in terms:
        every &= Q(answer_vector=_raw(_text(term.queries)))
    some_about = Exists(queryset.order_by().filter(search_vector=_raw(any_term)))
    answers = queryset.filter(every, ~some_about).order_by("slug").values_list("pk", flat=True)
    return list(answers), terms
