"""Input that used to reach the database or the JSON decoder and answer 500 is a 400 now."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/api/questions/%00/",
        "/api/topics/a%00/",
        "/api/applications/%00/",
        "/api/questions/?topic=a%00",
        "/api/questions/?search=x%00y",
        "/questions/?topic=%00",
        "/admin/quizbank/question/?status=%00",
    ],
)
def test_a_nul_byte_anywhere_in_the_url_is_a_400(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code == 400


def test_a_nul_byte_in_a_form_field_is_a_400(client):
    response = client.post("/accounts/login/", {"username": "a\x00b", "password": "x"})
    assert response.status_code == 400


@pytest.mark.parametrize("path", ["/api/quick-checks/{pk}/answer/", "/api/submissions/"])
def test_json_nested_thousands_of_levels_deep_is_a_400(api, user, path):
    from quizbank.tests.factories import QuickCheckFactory

    path = path.format(pk=QuickCheckFactory().pk)
    api.force_authenticate(user)
    body = "[" * 1500 + "]" * 1500
    response = api.post(path, body, content_type="application/json")
    assert response.status_code == 400
    assert "nested" in response.json()["detail"]


def test_a_nul_in_submitted_code_is_a_400(api, user):
    api.force_authenticate(user)
    response = api.post("/api/submissions/", {"question": "x", "code": "a\x00b"}, format="json")
    assert response.status_code == 400


def test_an_overlong_email_on_the_profile_is_a_form_error(client, user):
    client.force_login(user)
    email = "a" * 250 + "@example.com"
    response = client.post(
        "/accounts/profile/", {"display_name": "A", "daily_goal": 3, "email": email}
    )
    assert response.status_code == 200
    assert "email" in response.context["form"].errors


def test_pages_carry_a_content_security_policy_without_inline_scripts(client):
    response = client.get("/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    assert "frame-ancestors 'none'" in policy
    assert b"<script>" not in response.content  # every script is a file the policy allows


def test_the_api_docs_page_still_works_under_its_own_policy(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert "'unsafe-inline'" in response["Content-Security-Policy"].split("style-src")[0]
