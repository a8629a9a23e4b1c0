"""Input no view can use, refused at the door; and the site's own page for a 405.

PostgreSQL text cannot hold a NUL character: a NUL in a URL, a query string, a header or a form
field that reaches a query raises a DataError (a 500). Rather than guard every lookup and filter,
requests carrying one are answered 400 here, before any view runs. A cookie holding one is dropped
instead (and deleted in the browser): answering 400 would lock the visitor out, since the browser
sends the cookie again with every request. Form bodies that are not valid UTF-8 are refused too:
Django would replace the bad bytes, so the code graded would not be the code sent."""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

import django.db
import kombu.exceptions
import redis.exceptions
from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views import defaults

logger = logging.getLogger(__name__)

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _has_nul(text: str) -> bool:
    return "\x00" in text or b"\x00" in unquote_to_bytes(text)


def _bad_request(request: HttpRequest, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=400)
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _not_utf8_field(request: HttpRequest) -> str | None:
    """The first form field whose value is not valid UTF-8, or None."""
    if request.content_type == FORM_TYPES[0]:
        for pair in request.body.split(b"&"):
            name, _, value = pair.partition(b"=")
            try:
                unquote_to_bytes(value.replace(b"+", b" ")).decode()
            except UnicodeDecodeError:
                return unquote_to_bytes(name).decode(errors="replace")
        return None
    # multipart: Django has decoded each part with errors="replace"; a replacement character the
    # body did not carry itself came from bytes that were not UTF-8.
    if "\ufffd".encode() in request.body:
        return None
    for key, values in request.POST.lists():
        if any("\ufffd" in v for v in values):
            return key
    return None


class RejectNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        headers_nul = any(
            "\x00" in value for key, value in request.headers.items() if key.lower() != "cookie"
        )
        if "\x00" in request.path or _has_nul(query) or headers_nul:
            return _bad_request(request, NUL_MESSAGE)
        if request.content_type in FORM_TYPES:
            request.body  # noqa: B018  (read first, so both checks below can see the raw bytes)
            if any(
                "\x00" in key or any("\x00" in v for v in values)
                for key, values in request.POST.lists()
            ):
                return _bad_request(request, NUL_MESSAGE)
            field = _not_utf8_field(request)
            if field is not None:
                return _bad_request(request, f"{field}: the value is not valid UTF-8 text.")
        dropped = [name for name, value in request.COOKIES.items() if _has_nul(name + value)]
        for name in dropped:
            del request.COOKIES[name]
        response = self.get_response(request)
        for name in dropped:
            response.delete_cookie(name)
        return response


NUL_MESSAGE = "The request contains a NUL character, which no field accepts."


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


class ApiNotFoundMiddleware:
    """Under /api/, a 404 that no API view made (a path matching no route) answers JSON as the
    API's own 404s do, not the site's HTML page (or Django's debug page under DEBUG)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith("/api/")
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return JsonResponse({"detail": "Not found."}, status=404)
        return response


def _parent_page(path: str) -> str:
    """The page an action belongs to (/questions/x/bookmark/ -> /questions/x/), if it is one."""
    parent = path.rstrip("/").rsplit("/", 1)[0] + "/"
    try:
        resolve(parent)
    except Resolver404:
        return ""
    return parent


# What an outage of PostgreSQL or Redis (the broker and the cache) raises while a view runs.
SERVICE_ERRORS: tuple[type[BaseException], ...] = (
    django.db.OperationalError,
    django.db.InterfaceError,
    kombu.exceptions.OperationalError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)
RETRY_AFTER_SECONDS = 30
UNAVAILABLE = (
    "The site cannot reach its database or grading queue right now. Nothing was lost on our side; "
    "please try again in a minute."
)


def service_unavailable(request: HttpRequest, message: str = UNAVAILABLE) -> HttpResponse:
    """503 with Retry-After: JSON under /api/, plain text elsewhere."""
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class ServiceUnavailableMiddleware:
    """A database or Redis outage is a 503 the client can retry, never an HTML 500.

    DRF hands exceptions it does not know back to Django, so this covers the API too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, SERVICE_ERRORS):
            logger.error("service unavailable on %s: %r", request.path, exception)
            return service_unavailable(request)
        return None


class SitePagesUnderDebugMiddleware:
    """Under DEBUG (the development default: `make run`) Django answers a 404 or a 500 with its
    technical pages; this shows the site's own instead, as in production, so a newcomer sees the
    site's pages. A 500's traceback is still logged (the console under runserver);
    DEBUG_TECHNICAL_PAGES=1 brings Django's pages back. Before CommonMiddleware, so that an
    address missing its slash is still redirected rather than answered 404."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    @staticmethod
    def active() -> bool:
        return settings.DEBUG and not settings.DEBUG_TECHNICAL_PAGES

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # No view matched the address (a view's own 404 has its resolver_match).
        if self.active() and response.status_code == 404 and request.resolver_match is None:
            return defaults.page_not_found(request, Resolver404())
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not self.active():
            return None
        if isinstance(exception, Http404):
            return defaults.page_not_found(request, exception)
        if isinstance(exception, (PermissionDenied, BadRequest, SuspiciousOperation)):
            return None  # Django answers these with the site's 403 and 400 pages even under DEBUG
        logger.exception("Internal Server Error: %s", request.path)
        return defaults.server_error(request)
