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
