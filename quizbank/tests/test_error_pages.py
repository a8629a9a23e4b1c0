"""Errors answer with pages of the site's own (its header, a way on), never the browser's blank
page; the API keeps its JSON."""

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error

from .factories import QuestionFactory

pytestmark = pytest.mark.django_db


def test_an_unknown_address_is_the_sites_404_page(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "<h1>Page not found</h1>" in page
    assert 'class="site-header"' in page and 'href="/questions/"' in page


def test_opening_a_post_only_action_is_a_405_page_that_links_back(client):
    QuestionFactory(slug="views")
    response = client.get("/questions/views/bookmark/")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    page = response.content.decode()
    assert "This address is an action, not a page" in page
    assert 'href="/questions/views/"' in page and 'class="site-header"' in page


def test_a_405_from_the_api_stays_json(admin_client):
    response = admin_client.delete("/api/topics/")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert "Allow" in response


def test_a_server_error_is_the_sites_500_page():
    # Django renders 500.html without the request's context (which may be what failed).
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert b'class="site-header"' in response.content


@pytest.fixture
def debug(settings):
    """As `make run` serves: DEBUG on."""
    settings.DEBUG = True


def test_under_debug_a_404_is_still_the_sites_page(client, debug):
    for url in ("/no-such-page/", "/questions/no-such-question/"):
        response = client.get(url)
        assert response.status_code == 404
        page = response.content.decode()
        assert "<h1>Page not found</h1>" in page and 'class="site-header"' in page


def test_under_debug_an_address_without_its_slash_still_redirects(client, debug):
    response = client.get("/questions")
    assert response.status_code == 301 and response["Location"] == "/questions/"


@pytest.mark.urls("quizbank.tests.failing_urls")
def test_under_debug_a_500_is_the_sites_page_and_the_traceback_is_logged(client, debug, caplog):
    response = client.get("/fails/")
    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert "ZeroDivisionError" in caplog.text


def test_debug_technical_pages_bring_djangos_404_back(client, debug, settings):
    settings.DEBUG_TECHNICAL_PAGES = True
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and b"<h1>Page not found</h1>" not in response.content
