"""Writes about accounts that span models: creating an account with its profile, API tokens."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from .models import ApiToken, Profile, User


@transaction.atomic
def account_create(*, username: str, email: str, password: str) -> Any:
    """Create a learner's account and profile. Preconditions: the caller validated the password
    (the sign-up form runs the password validators)."""
    user = get_user_model()(username=username, email=email)
    user.set_password(password)
    user.full_clean(exclude=["password"])
    user.save()
    Profile.objects.create(user=user)
    return user


@transaction.atomic
def profile_update(
    *, user: User, display_name: str, daily_goal: int, email: str, hide_difficulty: bool = False
) -> Profile:
    profile, _ = Profile.objects.get_or_create(user=user)
    profile.display_name = display_name
    profile.daily_goal = daily_goal
    profile.hide_difficulty = hide_difficulty
    profile.full_clean()
    profile.save()
    if email != user.email:
        user.email = email
        user.save(update_fields=["email"])
    return profile


MAX_TOKENS = 20


def token_create(
    *, user: User, name: str, expires_in_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new named API token; returns it and its key, which is never stored and never shown
    again. Raises ValidationError naming the field (a name in use, too many tokens)."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name, e.g. what will use it."})
    if user.api_tokens.filter(name=name).exists():
        raise ValidationError({"name": f"You already have a token named {name!r}."})
    if user.api_tokens.count() >= MAX_TOKENS:
        raise ValidationError({"name": f"You can hold at most {MAX_TOKENS} tokens; revoke one."})
    key = secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    token = ApiToken(
        user=user,
        name=name,
        key_hash=ApiToken.hash_key(key),
        password_fingerprint=ApiToken.fingerprint(user),
        prefix=key[:8],
        expires_at=expires_at,
    )
    token.full_clean(exclude=["key_hash", "password_fingerprint", "prefix"])
    token.save()
    return token, key


def token_revoke(*, user: User, pk: int) -> bool:
    deleted, _ = ApiToken.objects.filter(user=user, pk=pk).delete()
    return bool(deleted)


def tokens_revoke_all(*, user: User) -> int:
    """Called when the password changes or is reset: whoever had the old password may have
    made tokens, so none survives it."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted


@transaction.atomic
def account_delete(*, user: User) -> None:
    """Delete the account and everything it owns. Every row a learner owns (profile, token,
    activity, submissions, notes, bookmarks, review cards, interviews, plans followed) points at
    the user with ON DELETE CASCADE; content they curated keeps existing without its author."""
    user.delete()
