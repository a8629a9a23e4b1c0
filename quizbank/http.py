"""Input no view can use, refused at the door; and the site's own page for a 405.

PostgreSQL text cannot hold a NUL character: a NUL in a URL, a query string or a form field that
reaches a query raises a DataError (a 500). Rather than guard every lookup and filter, requests
carrying one are answered 400 here, before any view runs."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve

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


class MethodNotAllowedPageMiddleware:
    """A page of the site's own for a 405 on a page URL.

    require_POST and friends answer a bare HttpResponseNotAllowed, which browsers show as their own
    blank error page: someone who opens an action's address (a bookmarked "reveal the answer", a
    link pasted from the address bar) is left with nothing. The API keeps DRF's JSON answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or request.path.startswith("/api/"):
            return response
        if response.streaming or response.content:  # a body of its own: keep it
            return response
        allowed = response.get("Allow", "")
        page = render(
            request,
            "405.html",
            {"allowed": allowed.replace(",", ", "), "back": _parent_page(request.path)},
            status=405,
        )
        page["Allow"] = allowed
        return page


def _parent_page(path: str) -> str:
    """The page an action belongs to (/questions/x/bookmark/ -> /questions/x/), if it is one."""
    parent = path.rstrip("/").rsplit("/", 1)[0] + "/"
    try:
        resolve(parent)
    except Resolver404:
        return ""
    return parent
