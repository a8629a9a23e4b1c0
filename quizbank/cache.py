"""The shared cache (Redis) as something a page can do without.

Pages read the shared cache for speed (the bank's version, cached facts, worker presence, sign-in
counters), never for anything only it knows. So while Redis is away this backend answers a read
with a miss, drops a write, and `incr` raises ValueError as for a missing key (every caller
already handles that); the page is built from the database. After a failure it does not try Redis
again for RETRY_AFTER seconds, so an outage costs one connection timeout, not one per lookup.
Grading still needs Redis (it is the broker too) and says so with a 503.

The price, stated: while Redis is away the sign-in and submission counters start from zero (each
counter lives in Redis only), so the limits are loose until it returns."""

from __future__ import annotations

import logging
import time
from typing import Any

import redis.exceptions
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)

RETRY_AFTER = 5.0
ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class DegradingRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = params.setdefault("OPTIONS", {})
        options.setdefault("socket_connect_timeout", 0.5)
        options.setdefault("socket_timeout", 1.0)
        super().__init__(server, params)
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        """False while reads answer misses because Redis failed lately (a miss then means
        "cannot tell", not "absent")."""
        return time.monotonic() >= self._down_until

    def retry_now(self) -> None:
        """The next call tries Redis, whatever failed lately (a background heartbeat's beat)."""
        self._down_until = 0.0

    def _call(self, name: str, default: Any, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() < self._down_until:
            if name in ("incr", "decr"):
                raise ValueError("the shared cache is unavailable")
            return default
        try:
            return getattr(super(), name)(*args, **kwargs)
        except ERRORS as exc:
            self._down_until = time.monotonic() + RETRY_AFTER
            logger.warning("shared cache unavailable for %.0f s: %r", RETRY_AFTER, exc)
            if name in ("incr", "decr"):
                raise ValueError("the shared cache is unavailable") from exc
            return default

    def get(self, key, default=None, version=None):
        return self._call("get", default, key, default, version)

    def get_many(self, keys, version=None):
        return self._call("get_many", {}, keys, version)

    def has_key(self, key, version=None):
        return self._call("has_key", False, key, version)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._call("add", False, key, value, timeout, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._call("set", None, key, value, timeout, version)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._call("set_many", list(data), data, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._call("touch", False, key, timeout, version)

    def delete(self, key, version=None):
        return self._call("delete", False, key, version)

    def delete_many(self, keys, version=None):
        return self._call("delete_many", None, keys, version)

    def incr(self, key, delta=1, version=None):
        return self._call("incr", None, key, delta, version)

    def decr(self, key, delta=1, version=None):
        return self._call("decr", None, key, delta, version)

    def clear(self):
        return self._call("clear", None)
