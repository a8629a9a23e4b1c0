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
def test_one_address_guessing_many_accounts_is_throttled_on_those_accounts_only(client, user):
    for n in range(4):
        log_in(client, username=f"guess-{n}", password="wrong")
    # The guessed accounts are refused from this address now, even with a right password...
    assert log_in(client, username="guess-0", password="anything").status_code == 429
    # ...but a learner behind the same address (a NAT, a proxy) whose account nobody attacked
    # still signs in with the right password.
    response = log_in(client)
    assert response.status_code == 302


@override_settings(LOGIN_FAILURE_LIMIT=3, TRUSTED_PROXY_COUNT=1)
def test_behind_a_trusted_proxy_the_forwarded_address_is_the_one_counted(user):
    from django.test import Client

    first = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.7")
    for _ in range(3):
        log_in(first, password="wrong")
    assert log_in(first).status_code == 429
    # The same proxy, another client: not blocked. A forged left-hand entry changes nothing.
    other = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.7, 198.51.100.8")
    assert log_in(other).status_code == 302


@override_settings(SIGNUP_LIMIT_PER_HOUR=2)
def test_sign_ups_from_one_address_are_limited(client):
    statuses = []
    for n in range(3):
        client.logout()
        response = client.post(
            "/accounts/signup/",
            {"username": f"new{n}", "password1": PASSWORD, "password2": PASSWORD},
        )
        statuses.append(response.status_code)
    assert statuses == [302, 302, 429]


@override_settings(PASSWORD_RESET_LIMIT_PER_HOUR=2)
def test_reset_mail_is_limited_but_the_page_says_the_same(client, user, mailoutbox):
    user.email = "learner@example.com"
    user.save()
    for _ in range(5):
        response = client.post("/accounts/password/reset/", {"email": "learner@example.com"})
        assert response.status_code == 302
    assert len(mailoutbox) == 2


@override_settings(LOGIN_FAILURE_LIMIT=2)
def test_the_admin_sign_in_is_throttled_too(client, staff):
    for _ in range(2):
        client.post("/admin/login/", {"username": "curator", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "curator", "password": PASSWORD})
    assert response.status_code == 200 and b"Too many failed sign-ins" in response.content


@override_settings(LOGIN_SLOWDOWN_AFTER=4, LOGIN_FAILURE_LIMIT=100)
def test_guesses_spread_over_many_addresses_are_slowed_but_the_owner_is_not(user):
    owner = Client(REMOTE_ADDR="192.0.2.1")
    assert log_in(owner).status_code == 302  # the owner's browser: remembered from now on
    owner.post("/accounts/logout/")
    for n in range(4):  # four guessers, one guess each: no address limit is reached
        assert log_in(Client(REMOTE_ADDR=f"198.51.100.{n}"), password="guess").status_code == 200
    guesser = Client(REMOTE_ADDR="198.51.100.99")
    response = log_in(guesser, password="guess")
    assert response.status_code == 429 and b"Wait 1 seconds" in response.content
    # even the right password waits in a browser that never signed in here ...
    assert log_in(Client(REMOTE_ADDR="203.0.113.5")).status_code == 429
    # ... but the owner's own browser goes straight in, from any address
    owner.defaults["REMOTE_ADDR"] = "203.0.113.77"
    assert log_in(owner).status_code == 302


@override_settings(LOGIN_SLOWDOWN_AFTER=2, LOGIN_FAILURE_LIMIT=100)
def test_the_wait_doubles_with_each_failure_and_then_lets_a_try_through(user):
    from django.core.cache import cache

    from accounts.throttling import _anywhere_key

    def later(seconds):
        failures, last = cache.get(_anywhere_key("learner"))
        cache.set(_anywhere_key("learner"), (failures, last - seconds), 60)

    for n in range(4):
        assert log_in(Client(REMOTE_ADDR=f"198.51.100.{n}"), password="guess").status_code == 200
        later(100)  # each guess after the wait the one before earned: each one is tried
    failures, last = cache.get(_anywhere_key("learner"))
    assert failures == 4
    later(-100)
    response = log_in(Client(REMOTE_ADDR="198.51.100.50"), password="guess")
    assert b"Wait 4 seconds" in response.content  # 2 ** (4 - 2)
    later(5)
    assert log_in(Client(REMOTE_ADDR="203.0.113.5")).status_code == 302


def test_a_forged_known_device_cookie_is_ignored(user, settings):
    settings.LOGIN_SLOWDOWN_AFTER = 1
    log_in(Client(REMOTE_ADDR="198.51.100.1"), password="guess")
    forger = Client(REMOTE_ADDR="198.51.100.2")
    forger.cookies["qb_known"] = '["anything"]'
    assert log_in(forger, password="guess").status_code == 429
