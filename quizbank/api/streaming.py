"""A JSON object written as it is read: for documents too large to build in memory (an account's
export). Sections are encoded one row at a time with DRF's encoder (dates, decimals, UUIDs as the
API writes them) and sent in chunks of about CHUNK_BYTES."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet
from rest_framework.utils.encoders import JSONEncoder

CHUNK_BYTES = 64 * 1024
ROWS_PER_FETCH = 500


def json_object_stream(sections: Iterable[tuple[str, Any]]) -> Iterator[bytes]:
    """`{"name": value, ...}` from (name, value) pairs; a value that is a dict (or a scalar) is
    written whole, a queryset or any other iterable as an array, one row at a time."""
    encode = JSONEncoder(ensure_ascii=False).encode
    buffer: list[str] = []
    size = 0

    def put(text: str) -> Iterator[bytes]:
        nonlocal size
        buffer.append(text)
        size += len(text)
        if size >= CHUNK_BYTES:
            yield "".join(buffer).encode()
            buffer.clear()
            size = 0

    yield from put("{")
    for index, (name, value) in enumerate(sections):
        yield from put(("," if index else "") + json.dumps(name) + ":")
        if isinstance(value, dict | str | int | float | bool) or value is None:
            yield from put(encode(value))
            continue
        rows = value.iterator(chunk_size=ROWS_PER_FETCH) if isinstance(value, QuerySet) else value
        yield from put("[")
        for number, row in enumerate(rows):
            yield from put(("," if number else "") + encode(row))
        yield from put("]")
    yield from put("}")
    if buffer:
        yield "".join(buffer).encode()
