"""What the site caches about the bank, and when it forgets it.

Cached bank facts (the list's facet counts) are keyed by a *bank version*: a token that changes on
every write to a question, topic or application (admin curation, load_bank, a publish), so a stale
count is never served; old keys simply expire. Redis when REDIS_URL is set, else the process's own
memory (the development default).
"""

from __future__ import annotations

import uuid

from django.core.cache import cache
from django.db import transaction

BANK_VERSION_KEY = "quizbank:bank-version"
# Cached bank facts are dropped by a version change; this only bounds what old versions keep.
BANK_CACHE_TIMEOUT = 24 * 60 * 60


def bank_version() -> str:
    version = cache.get(BANK_VERSION_KEY)
    if version is None:
        cache.add(BANK_VERSION_KEY, uuid.uuid4().hex, None)
        version = cache.get(BANK_VERSION_KEY) or ""
    return version


def bank_changed() -> None:
    """Forget every cached bank fact. Called at the write, for the writer's own next read, and
    again at commit: a request that read the old rows between the two cached them under the
    first new version."""
    _bump()
    transaction.on_commit(_bump)


def _bump() -> None:
    cache.set(BANK_VERSION_KEY, uuid.uuid4().hex, None)
