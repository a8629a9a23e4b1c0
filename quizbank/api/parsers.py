"""JSON bodies decoded with bounds: nesting too deep to be real data is a 400 (the stdlib decoder
recurses, so 1,500 levels in 3 KB raised RecursionError, a 500), and so is a NUL character, which
no field can store."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


def _check(value: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.")
    if isinstance(value, str):
        if "\x00" in value:
            raise ParseError("JSON strings must not contain NUL characters.")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, depth + 1)
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.") from exc
        _check(data)
        return data
