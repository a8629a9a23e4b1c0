"""Input no view can use, refused at the door.

PostgreSQL text cannot hold a NUL character: a NUL in a URL, a query string or a form field that
reaches a query raises a DataError (a 500). Rather than guard every lookup and filter, requests
carrying one are answered 400 here, before any view runs."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _has_nul(text: str) -> bool:
    return "\x00" in text or b"\x00" in unquote_to_bytes(text)


class RejectNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        form_nul = request.content_type in FORM_TYPES and any(
            "\x00" in key or any("\x00" in v for v in values)
            for key, values in request.POST.lists()
        )
        if "\x00" in request.path or _has_nul(query) or form_nul:
            message = "The request contains a NUL character, which no field accepts."
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=400)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
