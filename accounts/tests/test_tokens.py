"""API tokens: several per learner, named, expiring, stored only as a hash, shown once (after a
response to the post, never stored, never cached), revoked one by one, and dead once the password
hash changes, whoever changed it."""

from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import token_create

pytestmark = pytest.mark.django_db


def new_token(client, name="laptop", days="90"):
    page = client.post("/accounts/tokens/new/", {"name": name, "expires_in_days": days})
    assert page.status_code == 200
    return page, page.context["new_key"]


def test_a_new_key_is_shown_once_and_only_its_hash_is_stored(client, api, user):
    client.force_login(user)
    page, key = new_token(client)
    assert key.encode() in page.content
    assert "no-store" in page["Cache-Control"]
    assert key.encode() not in client.get("/accounts/tokens/").content  # a refresh: gone
    token = ApiToken.objects.get(user=user)
    assert token.key_hash == ApiToken.hash_key(key) and key not in token.key_hash
    # Not even for a moment in the session's row.
    assert all(key not in session.session_data for session in Session.objects.all())
    assert all(key not in str(session.get_decoded()) for session in Session.objects.all())
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/progress/").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_learner_holds_several_named_tokens_and_revokes_one(client, api, user):
    client.force_login(user)
    _, laptop = new_token(client, "laptop")
    _, ci = new_token(client, "ci")
    assert user.api_tokens.count() == 2
    duplicate = client.post("/accounts/tokens/new/", {"name": "ci", "expires_in_days": "30"})
    assert (
        duplicate.status_code == 400 and "already have a token named" in duplicate.content.decode()
    )
    client.post(f"/accounts/tokens/{user.api_tokens.get(name='laptop').pk}/revoke/")
    api.credentials(HTTP_AUTHORIZATION=f"Token {laptop}")
    assert api.get("/api/progress/").status_code == 401
    api.credentials(HTTP_AUTHORIZATION=f"Token {ci}")
    assert api.get("/api/progress/").status_code == 200


def test_an_expired_token_no_longer_works(api, user):
    token, key = token_create(user=user, name="short", expires_in_days=1)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = api.get("/api/progress/")
    assert response.status_code == 401 and "expired" in response.json()["detail"]


def test_changing_the_password_revokes_every_token(client, api, user):
    _, key = token_create(user=user, name="script")
    client.force_login(user)
    response = client.post(
        "/accounts/password/change/",
        {
            "old_password": "a-long-test-password",
            "new_password1": "another-long-passphrase-42",
            "new_password2": "another-long-passphrase-42",
        },
    )
    assert response.status_code == 302
    assert not user.api_tokens.exists()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/progress/").status_code == 401


def test_staff_setting_the_password_in_the_admin_kills_every_token(admin_client, api, user):
    _, key = token_create(user=user, name="script")
    response = admin_client.post(
        f"/admin/accounts/user/{user.pk}/password/",
        {"password1": "a-new-admin-set-pass-77", "password2": "a-new-admin-set-pass-77"},
    )
    assert response.status_code == 302
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/progress/").status_code == 401
    assert not user.api_tokens.exists()  # the dead token is cleared when it is next presented


@pytest.mark.parametrize("route", ["set_password", "raw update"])
def test_a_token_dies_with_the_password_however_the_hash_changes(api, user, route):
    _, key = token_create(user=user, name="script")
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/progress/").status_code == 200
    if route == "set_password":
        user.set_password("changed-in-a-shell-99")
        user.save()
    else:
        type(user).objects.filter(pk=user.pk).update(password="!unusable")
    assert api.get("/api/progress/").status_code == 401


def test_a_token_made_after_the_change_works(api, user):
    user.set_password("the-newer-password-5")
    user.save()
    _, key = token_create(user=user, name="after")
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/progress/").status_code == 200


def test_tokens_are_per_user_and_need_a_post(client, user, django_user_model):
    other = django_user_model.objects.create_user("other", password="x-long-password-1")
    theirs, key = token_create(user=other, name="theirs")
    client.force_login(user)
    assert client.get("/accounts/tokens/new/").status_code == 405
    page = client.get("/accounts/tokens/").content.decode()
    assert "theirs" not in page and theirs.prefix not in page
    client.post(f"/accounts/tokens/{theirs.pk}/revoke/")
    assert ApiToken.objects.filter(pk=theirs.pk).exists()


def test_the_admin_never_shows_a_key(admin_client, user):
    token, key = token_create(user=user, name="script")
    page = admin_client.get("/admin/accounts/apitoken/").content.decode()
    assert token.prefix in page and key not in page and token.key_hash not in page
    assert admin_client.get("/admin/authtoken/tokenproxy/").status_code == 404
