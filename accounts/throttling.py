"""Failed sign-ins, counted in the cache (Redis when REDIS_URL is set, so every web process sees
the same counts). Two counters: one per account and address, so a guesser is stopped without
letting anyone lock a stranger out from elsewhere; one per address over all accounts, for a
guesser trying many accounts. A counter lives LOGIN_FAILURE_WINDOW seconds from its first failure.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache


def _keys(username: str, address: str) -> tuple[str, str]:
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return f"login-failures:{account}:{address}", f"login-failures:address:{address}"


def login_blocked(*, username: str, address: str) -> bool:
    account_key, address_key = _keys(username, address)
    counts = cache.get_many([account_key, address_key])
    return (
        counts.get(account_key, 0) >= settings.LOGIN_FAILURE_LIMIT
        or counts.get(address_key, 0) >= settings.LOGIN_FAILURE_ADDRESS_LIMIT
    )


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
