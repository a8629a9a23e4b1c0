"""OpenAPI post-processing: the error answers every operation can give, documented once.

drf-spectacular documents the success response of each operation; clients also need to know
the errors: 400 (the field and the reason), 401 (with `WWW-Authenticate`), 403, 404 and, where
a throttle applies, 429 (with `Retry-After`); and 503 (with `Retry-After`) while the database or
Redis is unavailable."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema

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

# Where the learner's budget applies (practice/services/submissions.py, interviews.py).
THROTTLED = {
    "/api/submissions/": {"post"},
    "/api/interviews/": {"post"},
    "/api/interviews/{id}/answer/": {"post"},
}
# Refused because of the object's state: an interview over, an undo someone else's action beat.
CONFLICTS = {
    "/api/interviews/{id}/answer/": {"post"},
    "/api/interviews/{id}/hint/": {"post"},
    "/api/reviews/undo/": {"post"},
}


class SummarySchema(AutoSchema):
    """For a ViewSet whose `list` answers one object (a summary or a session), not an array."""

    def _is_list_view(self, serializer: Any = None) -> bool:
        return False


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
            elif any(p.get("name") == "page" for p in operation.get("parameters", [])):
                errors["404"] = _response("No such page of the list.", ERROR)
            if method in CONFLICTS.get(path, set()):
                errors["409"] = _response("Refused in the object's present state.", ERROR)
            if method in THROTTLED.get(path, set()):
                errors["429"] = _response("Too many requests: retry after Retry-After.", ERROR)
            errors["503"] = _response(
                "The database or the grading queue is unavailable: retry after Retry-After.",
                ERROR,
            )
            for status, response in errors.items():
                responses.setdefault(status, response)
    return result
