"""Ranking elsewhere (the SQLite development default): substring matches of the same terms,
scored by the same field weights and held to the same coverage, without typo correction."""

from __future__ import annotations

from typing import Any

from django.db.models import (
    Case,
    FloatField,
    IntegerField,
    Max,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast

from .terms import MIN_SCORE, MIN_SHARE_OF_BEST, Term, min_coverage, stem, weigh_foreign


def ranked(queryset: QuerySet, terms: list[Term], text: str) -> tuple[list[int], list[Term]]:
    """The ids of the questions of `queryset` about `terms`, best first, cut off under a share of
    the best (MIN_SHARE_OF_BEST), and the terms searched."""
    _mark_foreign(queryset, terms)
    weigh_foreign(terms)
    total = sum(t.weight for t in terms)
    coverage: Any = Value(0.0, output_field=FloatField())
    score: Any = Value(0.0, output_field=FloatField())
    for term in terms:
        stems = [stem(p) for p in term.phrases]
        fields = {}
        for name in ("title", "concepts_text", "slug", "prompt"):
            found = Q()
            for one in stems:
                found |= Q(**{f"{name}__icontains": one})
            fields[name] = found
        head = fields["title"] | fields["concepts_text"] | fields["slug"]
        coverage += Case(
            When(head | fields["prompt"], then=Value(0.0 if term.unused else term.weight)),
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
    rows = list(
        queryset.annotate(concepts_text=Cast("concepts", TextField()))
        .alias(coverage=coverage, score=score)
        .filter(coverage__gt=min_coverage(terms), score__gte=MIN_SCORE * total)
        .annotate(rank=score / total)
        .order_by()
        .values_list("pk", "slug", "rank")
    )
    best = max((rank for _, _, rank in rows), default=0.0)
    kept = sorted(
        (r for r in rows if r[2] >= best * MIN_SHARE_OF_BEST), key=lambda r: (-r[2], r[1])
    )
    return [pk for pk, _, _ in kept], terms


def _mark_foreign(queryset: QuerySet, terms: list[Term]) -> None:
    """Mark each plain word that no title, concept or slug holds (as a substring of its stem) as
    foreign, and unused when no prompt or answer does either, as postgres.py does from the
    vocabulary table and the search vectors: one query for all of them."""
    plain = [t for t in terms if t.plain and len(t.phrases[0]) >= 4]
    if not plain:
        return
    found = {}
    for n, term in enumerate(plain):
        one = stem(term.phrases[0])
        head = Q(title__icontains=one) | Q(concepts_text__icontains=one) | Q(slug__icontains=one)
        found[f"t{n}"] = Max(
            Case(
                When(head, then=Value(2)),
                When(Q(prompt__icontains=one) | Q(answer__icontains=one), then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            )
        )
    held = (
        queryset.annotate(concepts_text=Cast("concepts", TextField())).order_by().aggregate(**found)
    )
    for n, term in enumerate(plain):
        term.foreign = held[f"t{n}"] < 2
        term.unused = not held[f"t{n}"]
