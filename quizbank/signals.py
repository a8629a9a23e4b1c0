"""Signals only clear caches (house style): any write to the bank forgets what was cached of it."""

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save

from .caching import bank_changed
from .models import Application, Question, Topic


def _bank_changed(sender: Any, **kwargs: Any) -> None:
    if kwargs.get("action", "post_").startswith("post_"):  # m2m_changed also sends pre_*
        bank_changed()


def connect() -> None:
    for model in (Question, Topic, Application):
        post_save.connect(_bank_changed, sender=model, dispatch_uid=f"bank-save-{model.__name__}")
        post_delete.connect(
            _bank_changed, sender=model, dispatch_uid=f"bank-delete-{model.__name__}"
        )
    for through in (Question.topics.through, Question.applications.through):
        m2m_changed.connect(
            _bank_changed, sender=through, dispatch_uid=f"bank-m2m-{through.__name__}"
        )
