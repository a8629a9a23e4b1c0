"""Every route of the site, pinned both ways: a name reverses to its path, and the path resolves to
that name. A route added, renamed or moved fails here until this table says so (the admin's own
routes are Django's and are left out)."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

S = {"slug": "some-slug"}
PK = {"pk": 7}

ROUTES = [
    # the API: quizbank/urls.py mounts practice/api/urls.py (the one router) under /api/
    ("health", {}, "/health/"),
    ("schema", {}, "/api/schema/"),
    ("api-docs", {}, "/api/docs/"),
    ("api-redoc", {}, "/api/redoc/"),
    ("api:api-root", {}, "/api/"),
    ("api:question-list", {}, "/api/questions/"),
    ("api:question-detail", S, "/api/questions/some-slug/"),
    ("api:topic-list", {}, "/api/topics/"),
    ("api:topic-detail", S, "/api/topics/some-slug/"),
    ("api:application-list", {}, "/api/applications/"),
    ("api:application-detail", S, "/api/applications/some-slug/"),
    ("api:quick-check-list", {}, "/api/quick-checks/"),
    ("api:quick-check-answer", PK, "/api/quick-checks/7/answer/"),
    ("api:submission-list", {}, "/api/submissions/"),
    ("api:submission-detail", PK, "/api/submissions/7/"),
    ("api:progress-list", {}, "/api/progress/"),
    ("api:interview-list", {}, "/api/interviews/"),
    ("api:interview-detail", PK, "/api/interviews/7/"),
    ("api:interview-answer", PK, "/api/interviews/7/answer/"),
    ("api:interview-hint", PK, "/api/interviews/7/hint/"),
    ("api:interview-finish", PK, "/api/interviews/7/finish/"),
    ("api:plan-list", {}, "/api/plans/"),
    ("api:plan-detail", S, "/api/plans/some-slug/"),
    ("api:me-export", {}, "/api/me/export/"),
    ("api:me-activity", {}, "/api/me/export/activity/"),
    ("api:review-list", {}, "/api/reviews/"),
    ("api:review-undo", {}, "/api/reviews/undo/"),
    ("api:review-rate", S, "/api/reviews/some-slug/rate/"),
    ("api:review-hint", S, "/api/reviews/some-slug/hint/"),
    ("api:review-give-up", S, "/api/reviews/some-slug/give-up/"),
    ("api:review-solve", S, "/api/reviews/some-slug/solve/"),
    # accounts/urls.py under /accounts/
    ("accounts:signup", {}, "/accounts/signup/"),
    ("accounts:login", {}, "/accounts/login/"),
    ("accounts:logout", {}, "/accounts/logout/"),
    ("accounts:profile", {}, "/accounts/profile/"),
    ("accounts:delete", {}, "/accounts/delete/"),
    ("accounts:tokens", {}, "/accounts/tokens/"),
    ("accounts:token-create", {}, "/accounts/tokens/new/"),
    ("accounts:token-revoke", PK, "/accounts/tokens/7/revoke/"),
    ("accounts:password_change", {}, "/accounts/password/change/"),
    ("accounts:password_change_done", {}, "/accounts/password/change/done/"),
    ("accounts:password_reset", {}, "/accounts/password/reset/"),
    ("accounts:password_reset_done", {}, "/accounts/password/reset/sent/"),
    (
        "accounts:password_reset_confirm",
        {"uidb64": "MQ", "token": "set-password"},
        "/accounts/password/reset/MQ/set-password/",
    ),
    ("accounts:password_reset_complete", {}, "/accounts/password/reset/done/"),
    # practice/urls.py at the root: the learner's pages and their actions
    ("practice:home", {}, "/"),
    ("practice:question-list", {}, "/questions/"),
    ("practice:question-detail", S, "/questions/some-slug/"),
    ("practice:hint-reveal", {**S, "order": 2}, "/questions/some-slug/hints/2/"),
    ("practice:answer-reveal", S, "/questions/some-slug/answer/"),
    ("practice:quick-check-answer", {**S, **PK}, "/questions/some-slug/checks/7/"),
    ("practice:rate", S, "/questions/some-slug/rate/"),
    ("practice:bookmark", S, "/questions/some-slug/bookmark/"),
    ("practice:note", S, "/questions/some-slug/note/"),
    ("practice:submit", S, "/questions/some-slug/submissions/"),
    ("practice:submission-detail", PK, "/submissions/7/"),
    ("practice:review", {}, "/review/"),
    ("practice:review-undo", {}, "/review/undo/"),
    ("practice:review-rate", S, "/review/some-slug/rate/"),
    ("practice:review-hint", S, "/review/some-slug/hint/"),
    ("practice:review-give-up", S, "/review/some-slug/give-up/"),
    ("practice:progress", {}, "/progress/"),
    ("practice:plan-list", {}, "/plans/"),
    ("practice:plan-detail", S, "/plans/some-slug/"),
    ("practice:plan-start", S, "/plans/some-slug/start/"),
    ("practice:interview-list", {}, "/interviews/"),
    ("practice:interview-new", {}, "/interviews/new/"),
    ("practice:interview-detail", PK, "/interviews/7/"),
    ("practice:interview-answer", PK, "/interviews/7/answer/"),
    ("practice:interview-hint", PK, "/interviews/7/hint/"),
    ("practice:interview-finish", PK, "/interviews/7/finish/"),
]


@pytest.mark.parametrize(("name", "kwargs", "path"), ROUTES, ids=[r[0] for r in ROUTES])
def test_a_name_reverses_to_its_path(name, kwargs, path):
    assert reverse(name, kwargs=kwargs) == path


@pytest.mark.parametrize(("name", "kwargs", "path"), ROUTES, ids=[r[0] for r in ROUTES])
def test_a_path_resolves_to_its_name(name, kwargs, path):
    match = resolve(path)
    assert match.view_name == name
    assert {k: str(v) for k, v in match.kwargs.items()} == {k: str(v) for k, v in kwargs.items()}


def named_routes(patterns, namespace=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from named_routes(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}"


def test_the_table_has_every_route_of_the_site():
    site = {name for name in named_routes(get_resolver().url_patterns)}
    site = {name for name in site if not name.startswith("admin:")}
    assert site == {name for name, _, _ in ROUTES}
