"""What every learner page needs to know about the visitor's settings."""

from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from accounts.models import Profile


def hides_difficulty(request) -> bool:
    """Whether the signed-in learner chose to hide difficulty everywhere; read once a request."""
    if not hasattr(request, "_hide_difficulty"):
        user = getattr(request, "user", None)
        hide = False
        if user is not None and user.is_authenticated:
            rows = Profile.objects.filter(user=user).values_list("hide_difficulty", flat=True)
            hide = bool(rows.first())
        request._hide_difficulty = hide
    return request._hide_difficulty


def learner_settings(request) -> dict[str, object]:
    # Lazy: a page that shows no difficulty never reads the profile.
    return {"hide_difficulty": SimpleLazyObject(lambda: hides_difficulty(request))}
