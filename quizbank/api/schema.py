"""OpenAPI post-processing: the error answers every operation can give, documented once.

drf-spectacular documents the success response of each operation; clients also need to know
the errors: 400 (the field and the reason), 401 (with `WWW-Authenticate`), 403, 404 and, where
a throttle applies, 429 (with `Retry-After`); and 503 (with `Retry-After`) while the database or
Redis is unavailable."""

from __future__ import annotations

from typing import Any

ERROR = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
FIELD_ERRORS = {
    "type": "object",
    "description": "Each field (or `detail`, or `non_field_errors`) with its reasons.",
    "additionalProperties": True,
}

THROTTLED = {"/api/submissions/": {"post"}}


def _response(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def document_error_responses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            errors = {
                "400": _response(
                    "The request is invalid: each field with its reason.", FIELD_ERRORS
                ),
                "401": _response("No valid credentials (see WWW-Authenticate).", ERROR),
                "403": _response("Signed in, but not allowed to do this.", ERROR),
            }
            if "{" in path:
                errors["404"] = _response("No such object, or not yours to see.", ERROR)
            if method in THROTTLED.get(path, set()):
                errors["429"] = _response("Too many requests: retry after Retry-After.", ERROR)
            errors["503"] = _response(
                "The database or the grading queue is unavailable: retry after Retry-After.",
                ERROR,
            )
            for status, response in errors.items():
                responses.setdefault(status, response)
    return result
