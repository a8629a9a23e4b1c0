"""API authentication by hashed token: `Authorization: Token <key>`."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from .models import ApiToken

# last_used_at is a hint for the owner, not an audit log: written at most once a minute.
TOUCH_EVERY = timedelta(minutes=1)


class HashedTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        token = (
            ApiToken.objects.select_related("user").filter(key_hash=ApiToken.hash_key(key)).first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.outlived_its_password():
            token.delete()
            raise exceptions.AuthenticationFailed("Invalid token.")
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            raise exceptions.AuthenticationFailed("This token has expired.")
        if token.last_used_at is None or now - token.last_used_at > TOUCH_EVERY:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
