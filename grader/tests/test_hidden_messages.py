"""Hidden-check messages locate nothing inside a container (issue 24, finding 4).

"item 4: the value differs" and "12 items where 13 were expected" let ten submissions recover all
13 booleans of a hidden check of contiguous-memory-layout, and a wrong function then passed it by
replaying them. A hidden message names the compare expression and the kind of difference only.
"""

from __future__ import annotations

import re

from grader.tests.helpers import assert_still_grading

REFERENCE = """
def probe():
    return [True, False, True, True, False, False, True, False, True, True, False, True, False]

def table():
    return {"alpha": 1, "beta": [1.0, 2.0], "gamma": "x"}
"""


def hidden_job(code: str) -> dict:
    return {
        "code": code,
        "reference": REFERENCE,
        "checks": [
            {"name": "flags", "code": "flags = probe()", "compare": ["len(flags)", "flags"]},
            {"name": "table", "code": "t = table()", "compare": "t"},
        ],
    }


def test_hidden_messages_name_the_expression_and_never_a_position_or_length(pool):
    flipped = REFERENCE.replace("True, True, False, False", "True, False, False, False", 1)
    flipped = flipped.replace('"beta": [1.0, 2.0]', '"beta": [1.0, 2.5]')
    shorter = REFERENCE.replace("True, False, True, False]", "True, False, True]")
    shorter = shorter.replace('"alpha": 1,', '"alpha": 1, "delta": 0,')
    messages = []
    for code in (flipped, shorter):
        result = pool.grade(hidden_job(code))
        assert result["status"] == "failed", result
        messages += [check["message"] for check in result["checks"]]
    flags, table, length, keys = messages
    assert flags.startswith("`flags`: "), flags
    assert table.startswith("a value differs: an item differs: "), table  # one expression
    assert length.startswith("`len(flags)`: "), length  # the check's own expression may say so
    assert keys == "the keys differ", keys
    for message in (flags, table):
        assert not re.search(r"\d", re.sub(r"\(rtol=[^)]*\)", "", message)), message
        assert "item" not in message.replace("an item", "") and "beta" not in message, message
    assert_still_grading(pool)
