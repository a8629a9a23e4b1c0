"""What every learner page needs to know about the visitor's settings."""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from accounts.selectors import profile_get


def hides_difficulty(request) -> bool:
    """Whether the signed-in learner chose to hide difficulty everywhere; read once a request."""
    if not hasattr(request, "_hide_difficulty"):
        profile = profile_get(user=getattr(request, "user", None))
        request._hide_difficulty = profile.hide_difficulty
    return request._hide_difficulty


def learner_settings(request) -> dict[str, object]:
    # Lazy: a page that shows no difficulty never reads the profile.
    return {"hide_difficulty": SimpleLazyObject(lambda: hides_difficulty(request))}
