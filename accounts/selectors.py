"""Reads about an account."""

from __future__ import annotations

from .models import Profile, Visitor, signed_in


def profile_get(*, user: Visitor) -> Profile:
    """The learner's settings: their saved profile, or the defaults (an unsaved Profile) for a
    visitor or an account whose profile was never written. Never creates a row."""
    if not signed_in(user):
        return Profile()
    return Profile.objects.filter(user=user).first() or Profile(user=user)
