"""What the site caches about the bank, and when it forgets it.

Cached bank facts (the list's facet counts) are keyed by a *bank version*: a token that changes on
every write to a question, topic or application (admin curation, load_bank, a publish), so a stale
count is never served; old keys simply expire. The version is read from the shared cache (Redis
when REDIS_URL is set) once a request (`bank_version`); an entry under a versioned key never
changes, so each process also keeps its own copy ("local" cache), as do the list's rendered
fragments.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from asgiref.local import Local
from django.core.cache import cache, caches
from django.core.signals import request_finished, request_started
from django.db import models, transaction

BANK_VERSION_KEY = "quizbank:bank-version"
# Cached bank facts are dropped by a version change; this only bounds what old versions keep.
BANK_CACHE_TIMEOUT = 24 * 60 * 60


# The version a request read, so that it reads the shared cache once, however many facts it
# looks up (a list request looks up the topics, the applications and the list's own): each round
# trip to Redis was about 0.3 ms. Kept only while a request runs (request_started and
# request_finished clear it); a command or a task reads the shared cache every time.
_request = Local()


def bank_version() -> str:
    version = getattr(_request, "version", None)
    if version is not None:
        return version
    version = cache.get(BANK_VERSION_KEY)
    if version is None:
        cache.add(BANK_VERSION_KEY, uuid.uuid4().hex, None)
        # None still: the shared cache is away (quizbank/cache.py). A version of this request's
        # own, so nothing cached under it is ever read again: the facts come from the database.
        version = cache.get(BANK_VERSION_KEY) or uuid.uuid4().hex
    if getattr(_request, "running", False):
        _request.version = version
    return version


def _request_started(**kwargs: Any) -> None:
    _request.running, _request.version = True, None


def _request_finished(**kwargs: Any) -> None:
    _request.running, _request.version = False, None


request_started.connect(_request_started, dispatch_uid="quizbank-bank-version-started")
request_finished.connect(_request_finished, dispatch_uid="quizbank-bank-version-finished")


def bank_fact_get(key: str) -> Any:
    """A cached bank fact: this process's copy, else the shared one (then kept here too). A key
    holds the bank version, so its value never changes and a local copy is never stale."""
    value = caches["local"].get(key)
    if value is None:
        value = cache.get(key)
        if value is not None:
            caches["local"].set(key, value, BANK_CACHE_TIMEOUT)
    return value


def bank_fact_set(key: str, value: Any) -> None:
    cache.set(key, value, BANK_CACHE_TIMEOUT)
    caches["local"].set(key, value, BANK_CACHE_TIMEOUT)


def bank_changed() -> None:
    """Forget every cached bank fact. Called at the write, for the writer's own next read, and
    again at commit: a request that read the old rows between the two cached them under the
    first new version."""
    _bump()
    transaction.on_commit(_bump)


def _bump() -> None:
    version = uuid.uuid4().hex
    cache.set(BANK_VERSION_KEY, version, None)
    if getattr(_request, "running", False):
        _request.version = version  # the writer's own next read sees its change


@dataclass(frozen=True)
class Tags:
    """The topics or the applications of the bank, in display order: what the list's facets
    accept and how a row's tag ids read, without a query per request."""

    slugs: dict[int, str]  # id -> slug
    names: dict[str, str]  # slug -> name

    def choices(self) -> list[tuple[str, str]]:
        return list(self.names.items())

    def ids_of(self, slugs: list[str]) -> list[int]:
        wanted = set(slugs)
        return [pk for pk, slug in self.slugs.items() if slug in wanted]

    def slugs_of(self, ids: list[int] | str | None) -> list[str]:
        """The slugs of a row's tag ids (a list, or the text "4,1"), in display order."""
        if isinstance(ids, str):
            ids = [int(i) for i in ids.split(",")]
        wanted = set(ids or ())
        return [slug for pk, slug in self.slugs.items() if pk in wanted]


def bank_tags(model: type[models.Model]) -> Tags:
    """The bank's topics or applications (`model`), cached per bank version."""
    key = f"quizbank:tags:{bank_version()}:{model._meta.label_lower}"
    tags = bank_fact_get(key)
    if tags is None:
        rows = model._default_manager.order_by(*model._meta.ordering or ["pk"]).values_list(
            "pk", "slug", "name"
        )
        tags = Tags({pk: slug for pk, slug, _ in rows}, {slug: name for _, slug, name in rows})
        bank_fact_set(key, tags)
    return tags
