import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"


def log_in(client, username="learner", password=PASSWORD, next_url=""):
    data = {"username": username, "password": password, "next": next_url}
    return client.post("/accounts/login/", data)


def test_signing_in_goes_to_next_and_signing_out_needs_a_post(client, user):
    response = log_in(client, next_url="/questions/broadcasting/")
    assert response.status_code == 302 and response["Location"] == "/questions/broadcasting/"
    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302
    assert not client.get("/").context["user"].is_authenticated


def test_a_wrong_password_says_so_without_saying_which_part_was_wrong(client, user):
    response = log_in(client, password="nope")
    assert response.status_code == 200
    assert b"correct username and password" in response.content


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_failed_sign_ins_are_throttled_even_with_the_right_password_then(client, user):
    for _ in range(3):
        assert log_in(client, password="wrong").status_code == 200
    response = log_in(client)
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    assert "_auth_user_id" not in client.session


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_the_throttle_is_per_address_so_a_stranger_cannot_lock_you_out(client, user):
    for _ in range(3):
        log_in(client, password="wrong")
    elsewhere = Client(REMOTE_ADDR="203.0.113.9")
    assert log_in(elsewhere).status_code == 302


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_a_successful_sign_in_clears_the_failures(client, user):
    for _ in range(2):
        log_in(client, password="wrong")
    assert log_in(client).status_code == 302
    client.post("/accounts/logout/")
    for _ in range(2):
        log_in(client, password="wrong")
    assert log_in(client).status_code == 302


@override_settings(LOGIN_FAILURE_LIMIT=100, LOGIN_FAILURE_ADDRESS_LIMIT=4)
def test_one_address_guessing_many_accounts_is_throttled(client, user):
    for n in range(4):
        log_in(client, username=f"guess-{n}", password="wrong")
    assert log_in(client).status_code == 429


@override_settings(LOGIN_FAILURE_LIMIT=2)
def test_the_admin_sign_in_is_throttled_too(client, staff):
    for _ in range(2):
        client.post("/admin/login/", {"username": "curator", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "curator", "password": PASSWORD})
    assert response.status_code == 200 and b"Too many failed sign-ins" in response.content
