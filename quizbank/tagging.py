"""How the list matches and reads a question's topics and applications (its tags).

On PostgreSQL each question row holds the ids of its tags (`topic_ids`, `application_ids`, int
arrays kept equal to the link tables by triggers, migration 0009, GIN-indexed): a facet is an
array overlap and a row's tags are a column. Elsewhere (SQLite) the link tables are read: a facet
is an EXISTS, a row's tags a subquery. Either way a row's tags come as ids, which
`caching.Tags.slugs_of` reads.
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import connection
from django.db.models import (
    BooleanField,
    Exists,
    Expression,
    IntegerField,
    OuterRef,
    StringAgg,
    Subquery,
    TextField,
    Value,
)
from django.db.models.functions import Cast

from .models import Question

FIELDS = ("topics", "applications")


class QuestionColumn(Expression):
    """A column of the question table that is not on the model, named through the alias the
    query being compiled gives that table, so it stays right inside a subquery."""

    def __init__(self, column: str, output_field: Any) -> None:
        super().__init__(output_field=output_field)
        self.column = column

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        alias = compiler.query.get_initial_alias()
        return f"{compiler.quote_name(alias)}.{connection.ops.quote_name(self.column)}", ()


class Overlaps(Expression):
    """`column && ARRAY[ids]`: the row holds any of the ids."""

    output_field = BooleanField()

    def __init__(self, column: QuestionColumn, ids: list[int]) -> None:
        super().__init__()
        self.column, self.ids = column, ids

    def get_source_expressions(self) -> list[Any]:
        return [self.column]

    def set_source_expressions(self, exprs: Any) -> None:
        (self.column,) = exprs

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        sql, params = compiler.compile(self.column)
        return f"{sql} && %s::int[]", (*params, list(self.ids))


def _arrays() -> bool:
    return connection.vendor == "postgresql"


def _column(name: str) -> QuestionColumn:
    return QuestionColumn(f"{_singular(name)}_ids", ArrayField(IntegerField()))


def _singular(name: str) -> str:
    return Question._meta.get_field(name).m2m_reverse_field_name()  # type: ignore[union-attr]


def has_any(name: str, ids: list[int]) -> Any:
    """A filter: the question has any of these topics (`name="topics"`) or applications."""
    if _arrays():
        return Overlaps(_column(name), ids)
    through = Question._meta.get_field(name).remote_field.through  # type: ignore[union-attr]
    return Exists(
        through.objects.filter(question_id=OuterRef("pk"), **{f"{_singular(name)}_id__in": ids})
    )


def tag_ids(name: str) -> Any:
    """An annotation: the ids of the question's topics or applications, as a list or as the
    text "4,1" (both read by `caching.Tags.slugs_of`)."""
    if _arrays():
        return _column(name)
    through = Question._meta.get_field(name).remote_field.through  # type: ignore[union-attr]
    return Subquery(
        through.objects.filter(question_id=OuterRef("pk"))
        .order_by()
        .values("question_id")
        .annotate(ids=StringAgg(Cast(f"{_singular(name)}_id", TextField()), Value(",")))
        .values("ids")
    )
