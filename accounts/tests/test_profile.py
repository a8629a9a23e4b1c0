import re

import pytest

from accounts.models import DAILY_GOAL_MAX, DAILY_GOAL_MIN, Profile

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


def test_the_daily_goal_input_allows_only_what_the_server_accepts(client, user):
    client.force_login(user)
    page = client.get("/accounts/profile/").content.decode()
    field = re.search(r'<input[^>]*name="daily_goal"[^>]*>', page)
    assert field is not None
    assert f'min="{DAILY_GOAL_MIN}"' in field.group(0)
    assert f'max="{DAILY_GOAL_MAX}"' in field.group(0)
    for refused in (DAILY_GOAL_MIN - 1, DAILY_GOAL_MAX + 1):
        response = client.post("/accounts/profile/", {"display_name": "", "daily_goal": refused})
        assert response.status_code == 200 and b"errorlist" in response.content
    client.post("/accounts/profile/", {"display_name": "", "daily_goal": DAILY_GOAL_MIN})
    assert Profile.objects.get(user=user).daily_goal == DAILY_GOAL_MIN
