"""Failed sign-ins, counted in the cache (Redis when REDIS_URL is set, so every web process sees
the same counts). Two counters: one per account and address, so a guesser is stopped without
letting anyone lock a stranger out from elsewhere; one per address over all accounts, for a
guesser trying many accounts. A counter lives LOGIN_FAILURE_WINDOW seconds from its first failure.

Past the address limit, only accounts that already failed from that address are refused: many
people share one address behind a proxy or NAT, and a learner whose account nobody attacked can
still sign in with the right password there.

Guesses spread over many addresses get past both counters, so failures on an account are also
counted from everywhere: past LOGIN_SLOWDOWN_AFTER of them, each further try must wait (1 s, 2 s,
4 s, ... up to the window) since the last failure. A browser that signed in to the account before
carries a signed cookie saying so and is never slowed: the owner is not locked out by strangers.

Sign-up and password-reset mail are rate-limited per address (and reset mail per address of mail)
with the same counters.
"""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

DEVICE_COOKIE = "qb_known"
DEVICE_SALT = "accounts.throttling.known-device"
DEVICE_ACCOUNTS = 5  # accounts one browser is remembered for
DEVICE_MAX_AGE = 60 * 60 * 24 * 365


def _account(name: str) -> str:
    """A name's key in the cache: its digest, so no address or username is stored in clear."""
    return hashlib.sha256(name.strip().lower().encode()).hexdigest()[:32]


def _keys(username: str, address: str) -> tuple[str, str]:
    account = _account(username)
    return f"login-failures:{account}:{address}", f"login-failures:address:{address}"


def _anywhere_key(username: str) -> str:
    return f"login-failures:anywhere:{_account(username)}"


def _known_accounts(request: HttpRequest | None) -> list[str]:
    if request is None:
        return []
    try:
        known = request.get_signed_cookie(DEVICE_COOKIE, salt=DEVICE_SALT, max_age=DEVICE_MAX_AGE)
        accounts = signing.loads(known) if known else []
    except (KeyError, signing.BadSignature, ValueError):
        return []
    return [a for a in accounts if isinstance(a, str)] if isinstance(accounts, list) else []


def remember_device(request: HttpRequest, response: HttpResponse, username: str) -> None:
    """After a good sign-in: this browser is the owner's, never slowed for this account."""
    accounts = [a for a in _known_accounts(request) if a != _account(username)]
    accounts = [_account(username), *accounts][:DEVICE_ACCOUNTS]
    response.set_signed_cookie(
        DEVICE_COOKIE,
        signing.dumps(accounts),
        salt=DEVICE_SALT,
        max_age=DEVICE_MAX_AGE,
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )


def slowed_for(*, username: str, request: HttpRequest | None) -> int:
    """Seconds this try must still wait (0: go ahead), for failures on the account from anywhere."""
    if _account(username) in _known_accounts(request):
        return 0
    failures, last = cache.get(_anywhere_key(username)) or (0, 0.0)
    if failures < settings.LOGIN_SLOWDOWN_AFTER:
        return 0
    wait = min(2 ** (failures - settings.LOGIN_SLOWDOWN_AFTER), settings.LOGIN_FAILURE_WINDOW)
    return max(0, int(last + wait - time.time() + 0.999))


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
    return f"rate:{action}:{_account(key)}"


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
    anywhere = _anywhere_key(username)
    failures, _ = cache.get(anywhere) or (0, 0.0)
    # read-then-write: two failures at once may count as one, which only makes the wait shorter
    cache.set(anywhere, (failures + 1, time.time()), settings.LOGIN_FAILURE_WINDOW)
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
