from __future__ import annotations

import hashlib
from typing import TypeAlias, TypeGuard

from django.conf import settings
from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from .names import name_key


class User(AbstractUser):
    """The site's user. Custom from the first migration so it can grow without a painful swap."""

    email = models.EmailField("email address", blank=True)
    # accounts.names.name_key(username): what the name looks like, so sign-up can refuse a name
    # that a reader could not tell from one in use ("Alice", "alice", "Аlice" with a Cyrillic А).
    username_key = models.CharField(max_length=150, db_index=True, editable=False, default="")

    def clean(self) -> None:
        super().clean()
        self.username_key = name_key(self.username or "")


# Who is asking: a signed-in user or an anonymous visitor. Selectors and access checks take either
# (None counts as anonymous); services that write a learner's rows take a User.
Visitor: TypeAlias = "User | AnonymousUser | None"


def signed_in(user: Visitor) -> TypeGuard[User]:
    """Whether the visitor is a signed-in user (and, for the type checker, that it is a User)."""
    return user is not None and user.is_authenticated


# The daily goal's range, read by the model's validators, its constraint and the form's input.
DAILY_GOAL_MIN = 1
DAILY_GOAL_MAX = 200


class Profile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile"
    )
    display_name = models.CharField(max_length=80, blank=True)
    daily_goal = models.PositiveSmallIntegerField(
        default=5,
        validators=[MinValueValidator(DAILY_GOAL_MIN), MaxValueValidator(DAILY_GOAL_MAX)],
        help_text="Questions to practise a day.",
    )
    hide_difficulty = models.BooleanField(
        default=False,
        help_text="Interview-realistic: no difficulty shown on the list, question pages and "
        "reviews (mock interviews never show it).",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(daily_goal__gte=DAILY_GOAL_MIN, daily_goal__lte=DAILY_GOAL_MAX),
                name="profile_daily_goal_range",
            )
        ]

    def __str__(self) -> str:
        return self.display_name or self.user.get_username()


class ApiToken(models.Model):
    """A key a learner's scripts use for the API. Only a hash of the key is stored: the key is
    shown once, when it is made, and a leaked database leaks no usable key. Keys are long random
    strings, so a plain SHA-256 is enough (no slow password hash is needed)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What uses it, e.g. “laptop script”.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    password_fingerprint = models.CharField(
        max_length=64,
        editable=False,
        help_text="A digest of the owner's password hash when the token was made: once the "
        "password changes, by any route, the token no longer signs in.",
    )
    prefix = models.CharField(max_length=8, editable=False, help_text="The key's first characters.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="apitoken_name_unique_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @staticmethod
    def fingerprint(user: User) -> str:
        """A digest of the user's password hash (itself salted), so a token made under one
        password is refused under the next however the hash was changed: the password form, a
        reset, the admin, set_password() in a shell or a raw UPDATE."""
        return hashlib.sha256(user.password.encode()).hexdigest()

    def outlived_its_password(self) -> bool:
        return self.password_fingerprint != self.fingerprint(self.user)
