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


@pytest.mark.parametrize(
    "query",
    ["kind=&kind=", "bookmarked=-1", "difficulty=trivial", "progress=done", "topic=nope"],
)
def test_an_invalid_filter_value_is_a_400_naming_the_filter(api, query):
    response = api.get(f"/api/questions/?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()


def test_missing_credentials_get_a_401_with_a_challenge(api):
    response = api.get("/api/submissions/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_the_schema_documents_error_answers_and_types_the_progress_filter(api):
    import yaml

    schema = yaml.safe_load(api.get("/api/schema/").content)
    submissions = schema["paths"]["/api/submissions/"]["post"]["responses"]
    assert {"201", "400", "401", "403", "429"} <= set(submissions)
    detail = schema["paths"]["/api/submissions/{id}/"]["get"]["responses"]
    assert "404" in detail
    params = {p["name"]: p for p in schema["paths"]["/api/questions/"]["get"]["parameters"]}
    assert params["progress"]["schema"]["items"]["type"] == "string"


def test_the_schema_is_true_to_summaries_conflicts_and_limits(api):
    import yaml

    schema = yaml.safe_load(api.get("/api/schema/").content)
    paths = schema["paths"]
    for path in ("/api/progress/", "/api/reviews/"):  # one object each, never an array
        body = paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert "$ref" in body and body.get("type") != "array", path
    assert "404" in paths["/api/questions/"]["get"]["responses"]  # ?page past the end
    for path in (
        "/api/interviews/{id}/answer/",
        "/api/interviews/{id}/hint/",
        "/api/reviews/undo/",
    ):
        assert "409" in paths[path]["post"]["responses"], path
    for path in ("/api/interviews/", "/api/interviews/{id}/answer/"):
        assert "429" in paths[path]["post"]["responses"], path


def test_a_cookie_holding_a_nul_is_dropped_and_the_page_still_works(client, settings):
    for url in ("/", "/questions/", "/api/questions/"):
        client.cookies[settings.SESSION_COOKIE_NAME] = "abc\x00def"
        client.cookies["theme"] = "dark\x00"
        response = client.get(url)
        assert response.status_code == 200, url
        # the browser is told to forget the broken cookies, so the next request is clean
        assert response.cookies[settings.SESSION_COOKIE_NAME]["max-age"] == 0
        assert response.cookies["theme"]["max-age"] == 0


def test_a_nul_in_a_header_is_a_400(client):
    response = client.get("/api/questions/", headers={"X-Request-Id": "a\x00b"})
    assert response.status_code == 400 and "NUL" in response.json()["detail"]


def test_a_form_body_that_is_not_utf8_is_a_400_naming_the_field(client, user):
    client.force_login(user)
    body = b"username=ok&code=print%28%22%FF%FE%22%29"
    response = client.generic(
        "POST", "/accounts/login/", body, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert response.content.decode() == "code: the value is not valid UTF-8 text."


def test_a_multipart_part_that_is_not_utf8_is_a_400_naming_the_field(client):
    boundary = "XyZ"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="username"\r\n\r\nbad\xff'.encode(
            "latin-1"
        )
        + f"\r\n--{boundary}--\r\n".encode()
    )
    response = client.generic(
        "POST", "/accounts/login/", body, content_type=f"multipart/form-data; boundary={boundary}"
    )
    assert response.status_code == 400
    assert response.content.decode() == "username: the value is not valid UTF-8 text."


def test_a_real_replacement_character_in_a_form_is_accepted(client):
    response = client.post("/accounts/login/", {"username": "a\ufffdb", "password": "x"})
    assert response.status_code == 200  # the form's own "wrong name or password", not a 400


@pytest.mark.parametrize(
    "path",
    [
        "/api/questions/",
        "/api/submissions/",
        "/api/interviews/",
    ],
)
@pytest.mark.parametrize("page", ["9223372036854775807", "99999999999999999999999", "1000001"])
def test_a_page_number_past_any_list_is_a_404_not_a_500(api, user, path, page):
    api.force_authenticate(user)
    response = api.get(path, {"page": page})
    assert response.status_code == 404, response.content
    assert response.json()["detail"] == "Invalid page."


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "path", ["/api/nothing-here/", "/api/questions/a/b/c/", "/api/me/elsewhere/"]
)
def test_an_api_path_matching_no_route_is_a_json_404(client, settings, debug, path):
    settings.DEBUG = debug
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


def test_a_page_path_matching_no_route_stays_a_page(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
