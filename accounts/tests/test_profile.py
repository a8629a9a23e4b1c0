import pytest

from accounts.models import Profile

pytestmark = pytest.mark.django_db


def test_the_profile_page_needs_a_signed_in_user(client):
    response = client.get("/accounts/profile/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/profile/"


def test_a_learner_sets_their_display_name_daily_goal_and_email(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/profile/",
        {"display_name": "Ada", "daily_goal": "12", "email": "ada@example.com"},
    )
    assert response.status_code == 302
    profile = Profile.objects.get(user=user)
    assert (profile.display_name, profile.daily_goal) == ("Ada", 12)
    user.refresh_from_db()
    assert user.email == "ada@example.com"
    assert b"Welcome, Ada." in client.get("/").content


def test_a_daily_goal_out_of_range_is_refused(client, user):
    client.force_login(user)
    response = client.post("/accounts/profile/", {"display_name": "", "daily_goal": "0"})
    assert response.status_code == 200
    assert b"greater than or equal to 1" in response.content
