import pytest

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
