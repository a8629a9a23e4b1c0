"""Where a form may send the user back to: the one check of a `next` URL, for every app."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme


def safe_next(request: HttpRequest, target: str, default: str) -> str:
    """`target` when it is a URL on this site (and https when the request came over https, so a
    secure page never sends the user back over plain http); `default` otherwise."""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
