"""Signals only clear caches (house style): any write to the bank forgets what was cached of it,
and a write to a question's hints or exercise forgets the embeddings of its symptom passages read
from them (quizbank/search/semantic.py: the next search or load_bank computes them again)."""

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save

from .caching import bank_changed
from .models import Application, Exercise, Hint, Question, Topic


def _bank_changed(sender: Any, **kwargs: Any) -> None:
    if kwargs.get("action", "post_").startswith("post_"):  # m2m_changed also sends pre_*
        bank_changed()


def _symptoms_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    fields = kwargs.get("update_fields")
    if sender is Exercise and fields is not None and "wrong_solutions" not in fields:
        return
    Question.objects.filter(pk=instance.question_id).update(symptom_embeddings=None, symptom_key="")
    bank_changed()


def connect() -> None:
    for model in (Hint, Exercise):
        post_save.connect(
            _symptoms_changed, sender=model, dispatch_uid=f"symptoms-save-{model.__name__}"
        )
        post_delete.connect(
            _symptoms_changed, sender=model, dispatch_uid=f"symptoms-delete-{model.__name__}"
        )
    for bank_model in (Question, Topic, Application):
        name = bank_model.__name__
        post_save.connect(_bank_changed, sender=bank_model, dispatch_uid=f"bank-save-{name}")
        post_delete.connect(_bank_changed, sender=bank_model, dispatch_uid=f"bank-delete-{name}")
    for through in (Question.topics.through, Question.applications.through):
        m2m_changed.connect(
            _bank_changed, sender=through, dispatch_uid=f"bank-m2m-{through.__name__}"
        )
