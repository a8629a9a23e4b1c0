"""Every `*_valid` check constraint of every model agrees with its field's choices: the database
accepts each choice and refuses a value that is not one (the constraints are written from the
enums; this catches an enum and its constraint drifting apart, e.g. a new status the database
would refuse)."""

import pytest
from django.apps import apps
from django.db import models
from django.db.models import Value

pytestmark = pytest.mark.django_db


def valid_constraints():
    for model in apps.get_models():
        for constraint in model._meta.constraints:
            if isinstance(constraint, models.CheckConstraint) and constraint.name.endswith(
                "_valid"
            ):
                yield model, constraint


def constrained_field(model, constraint) -> models.Field:
    names = set()
    nodes = [constraint.condition]
    while nodes:
        node = nodes.pop()
        if isinstance(node, tuple):
            names.add(node[0].split("__")[0])
        else:
            nodes.extend(node.children)
    assert len(names) == 1, f"{constraint.name} names {names}"
    return model._meta.get_field(names.pop())


def accepts(constraint, field, value) -> bool:
    return constraint.condition.check({field.name: Value(value, output_field=field)})


CONSTRAINTS = list(valid_constraints())


def test_the_walk_finds_the_constraints():
    names = {c.name for _, c in CONSTRAINTS}
    assert {"question_status_valid", "submission_status_valid", "reviewcard_last_rating_valid"} <= (
        names
    )


@pytest.mark.parametrize(("model", "constraint"), CONSTRAINTS, ids=[c.name for _, c in CONSTRAINTS])
def test_the_database_takes_exactly_the_fields_choices(model, constraint):
    field = constrained_field(model, constraint)
    values = [value for value, _ in field.choices]
    assert values, f"{model.__name__}.{field.name} has no choices"
    assert all(accepts(constraint, field, value) for value in values)
    if isinstance(values[0], int):
        outside = [min(values) - 1, max(values) + 1]
    else:
        outside = ["not-a-choice", values[0].upper()]
    assert not any(accepts(constraint, field, value) for value in outside)
