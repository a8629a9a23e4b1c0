import pytest
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def test_creating_a_token_shows_it_once_and_it_signs_in_to_the_api(client, api, user):
    client.force_login(user)
    response = client.post("/accounts/tokens/new/")
    token = Token.objects.get(user=user)
    assert token.key.encode() in response.content
    assert token.key.encode() not in client.get("/accounts/tokens/").content
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/progress/").status_code == 200


def test_replacing_a_token_revokes_the_old_one(client, api, user):
    client.force_login(user)
    client.post("/accounts/tokens/new/")
    old = Token.objects.get(user=user).key
    client.post("/accounts/tokens/new/")
    assert Token.objects.get(user=user).key != old
    api.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    assert api.get("/api/progress/").status_code in (401, 403)


def test_revoking_the_token_stops_it_working(client, api, user):
    token = Token.objects.create(user=user)
    client.force_login(user)
    assert client.post("/accounts/tokens/revoke/")["Location"] == "/accounts/tokens/"
    assert not Token.objects.filter(user=user).exists()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/progress/").status_code in (401, 403)


def test_tokens_are_per_user_and_need_a_post(client, user, django_user_model):
    other = django_user_model.objects.create_user("other", password="x-long-password-1")
    theirs = Token.objects.create(user=other)
    client.force_login(user)
    assert client.get("/accounts/tokens/new/").status_code == 405
    assert theirs.key.encode() not in client.get("/accounts/tokens/").content
    client.post("/accounts/tokens/revoke/")
    assert Token.objects.filter(pk=theirs.pk).exists()
