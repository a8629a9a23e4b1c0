"""Writes about accounts that span models: creating an account with its profile, API tokens."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from rest_framework.authtoken.models import Token

from .models import Profile, User


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


@transaction.atomic
def token_create(*, user: User) -> Token:
    """A new API token for the user; it replaces (revokes) the one they had, if any."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def token_revoke(*, user: User) -> bool:
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


@transaction.atomic
def account_delete(*, user: User) -> None:
    """Delete the account and everything it owns. Every row a learner owns (profile, token,
    activity, submissions, notes, bookmarks, review cards, interviews, plans followed) points at
    the user with ON DELETE CASCADE; content they curated keeps existing without its author."""
    user.delete()
