"""Failed sign-ins, counted in the cache (Redis when REDIS_URL is set, so every web process sees
the same counts). Two counters: one per account and address, so a guesser is stopped without
letting anyone lock a stranger out from elsewhere; one per address over all accounts, for a
guesser trying many accounts. A counter lives LOGIN_FAILURE_WINDOW seconds from its first failure.

Past the address limit, only accounts that already failed from that address are refused: many
people share one address behind a proxy or NAT, and a learner whose account nobody attacked can
still sign in with the right password there.

Sign-up and password-reset mail are rate-limited per address (and reset mail per address of mail)
with the same counters.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def _keys(username: str, address: str) -> tuple[str, str]:
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return f"login-failures:{account}:{address}", f"login-failures:address:{address}"


def client_address(request: HttpRequest) -> str:
    """The client's address. Behind TRUSTED_PROXY_COUNT proxies that append to X-Forwarded-For,
    it is that many entries from the right (entries further left are the client's own claims)."""
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [a for a in forwarded if a]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")


def login_blocked(*, username: str, address: str) -> bool:
    account_key, address_key = _keys(username, address)
    counts = cache.get_many([account_key, address_key])
    account_failures = counts.get(account_key, 0)
    if account_failures >= settings.LOGIN_FAILURE_LIMIT:
        return True
    return (
        counts.get(address_key, 0) >= settings.LOGIN_FAILURE_ADDRESS_LIMIT and account_failures > 0
    )


def _rate_name(action: str, key: str) -> str:
    return f"rate:{action}:{hashlib.sha256(key.strip().lower().encode()).hexdigest()[:32]}"


def rate_reached(*, action: str, key: str, limit: int) -> bool:
    """True once `limit` counted actions happened within the window; counts nothing."""
    return (cache.get(_rate_name(action, key)) or 0) >= limit


def rate_limited(*, action: str, key: str, limit: int, window: int) -> bool:
    """Count one `action` for `key`; True once more than `limit` happened within `window` s."""
    name = _rate_name(action, key)
    cache.add(name, 0, window)
    try:
        count = cache.incr(name)
    except ValueError:
        cache.set(name, 1, window)
        count = 1
    return count > limit


def login_failed(*, username: str, address: str) -> None:
    for key in _keys(username, address):
        # add() starts the window only on the first failure; incr() never extends it.
        cache.add(key, 0, settings.LOGIN_FAILURE_WINDOW)
        try:
            cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.set(key, 1, settings.LOGIN_FAILURE_WINDOW)


def login_succeeded(*, username: str, address: str) -> None:
    account_key, _ = _keys(username, address)
    cache.delete(account_key)
