import pytest
from django.test import override_settings

from accounts.models import Profile, User

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-and-unusual-passphrase"


def sign_up(client, username="newcomer", next_url="", **extra):
    data = {"username": username, "password1": PASSWORD, "password2": PASSWORD, **extra}
    return client.post(f"/accounts/signup/?next={next_url}", data)


def test_signing_up_creates_the_account_and_its_profile_and_signs_in(client):
    response = sign_up(client, email="new@example.com")
    assert response.status_code == 302 and response["Location"] == "/"
    user = User.objects.get(username="newcomer")
    assert user.email == "new@example.com" and user.check_password(PASSWORD)
    assert Profile.objects.get(user=user).daily_goal == 5
    assert client.get("/").context["user"] == user


def test_signing_up_goes_back_to_the_question_it_came_from(client):
    response = sign_up(client, next_url="/questions/broadcasting/%23exercise")
    assert response["Location"] == "/questions/broadcasting/#exercise"


def test_signing_up_never_redirects_off_site(client):
    assert sign_up(client, next_url="https://evil.example/")["Location"] == "/"


def test_a_weak_or_mismatched_password_is_refused_with_the_reason(client):
    response = client.post(
        "/accounts/signup/", {"username": "x", "password1": "password", "password2": "password"}
    )
    assert response.status_code == 200
    assert b"too common" in response.content
    assert not User.objects.filter(username="x").exists()


def test_a_taken_username_is_refused(client, user):
    response = sign_up(client, username=user.username)
    assert response.status_code == 200 and b"already exists" in response.content


@pytest.mark.parametrize("look_alike", ["NEWCOMER", "Newcomer", "nеwcomer", "ｎｅｗｃｏｍｅｒ"])
def test_a_name_that_looks_like_one_in_use_is_refused(client, look_alike):
    # the second, fourth: a Cyrillic "е"; full-width letters
    assert sign_up(client, username="newcomer").status_code == 302
    client.logout()
    response = sign_up(client, username=look_alike)
    assert response.status_code == 200
    assert "username" in response.context["form"].errors
    assert User.objects.count() == 1


def test_a_name_validated_anywhere_else_is_keyed_too(client):
    # The admin's forms and the services validate with full_clean(), which keys the name.
    curator = User(username="Curator2")
    curator.set_password(PASSWORD)
    curator.full_clean()
    curator.save()
    assert curator.username_key == "curator2"
    assert sign_up(client, username="curatоr2").status_code == 200  # a Cyrillic "о"
    assert not User.objects.filter(username="curatоr2").exists()


@override_settings(SIGNUP_LIMIT_PER_HOUR=2)
def test_mistyped_sign_ups_do_not_count_against_the_limit_but_name_probes_do(client):
    for _ in range(4):  # a learner fighting the password rules
        response = client.post(
            "/accounts/signup/", {"username": "x", "password1": "password", "password2": "password"}
        )
        assert response.status_code == 200
    assert sign_up(client, username="first").status_code == 302
    client.logout()
    assert sign_up(client, username="first").status_code == 200  # a probe: counted
    assert sign_up(client, username="second").status_code == 429
