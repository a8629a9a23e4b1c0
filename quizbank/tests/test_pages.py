import re

import pytest

from .factories import QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_home_lists_topics_with_counts(client):
    topic = TopicFactory(name="Tensors")
    QuestionFactory(primary_topic=topic)
    response = client.get("/")
    assert response.status_code == 200
    assert b"Tensors" in response.content and b"1 question" in response.content


def test_the_question_list_filters_with_the_same_filterset(client):
    QuestionFactory(title="Easy one", difficulty="easy")
    QuestionFactory(title="Hard one", difficulty="hard")
    response = client.get("/questions/?difficulty=hard")
    assert b"Hard one" in response.content and b"Easy one" not in response.content


def test_a_bad_filter_on_the_page_says_why(client):
    response = client.get("/questions/?difficulty=impossible")
    assert response.status_code == 200
    assert b"difficulty:" in response.content and b"impossible" in response.content


def test_a_bad_filter_value_keeps_the_facet_panel_and_the_other_filters(client):
    tensors = TopicFactory(slug="tensors", name="Tensors")
    QuestionFactory(title="Hard one", difficulty="hard", primary_topic=tensors)
    QuestionFactory(title="Easy one", difficulty="easy", primary_topic=tensors)
    page = client.get("/questions/?topic=nope&difficulty=hard").content.decode()
    assert "topic: Select a valid choice. nope is not one of the available choices." in page
    assert "difficulty:" not in page
    # The panel is there, with its counts and the valid filter still ticked.
    assert 'name="topic" value="tensors"' in page
    assert re.search(r'name="difficulty" value="hard"[^>]*checked', page)
    assert "Hard one" in page and "Easy one" not in page


def test_a_question_page_renders_markdown_and_hides_drafts(client):
    QuestionFactory(slug="shown", prompt="Use `view`.")
    QuestionFactory(slug="hidden", status="draft")
    assert b"<code>view</code>" in client.get("/questions/shown/").content
    assert client.get("/questions/hidden/").status_code == 404


def test_formulas_are_marked_for_katex_but_code_keeps_its_dollars():
    from quizbank.markdown import render_markdown

    html = render_markdown(
        "Scale by $\\frac{1}{\\sqrt{d}}$, not `x = $y$`.\n\n$$\\sum_i p_i = 1$$\n"
    )
    assert '<span class="math inline">\\frac{1}{\\sqrt{d}}</span>' in html
    assert "<code>x = $y$</code>" in html
    assert '<div class="math block">' in html and "\\sum_i p_i = 1" in html


def test_every_page_links_the_sites_favicon(client):
    from pathlib import Path

    from django.conf import settings

    for url in ("/", "/questions/", "/accounts/login/", "/no-such-page/"):
        assert b'<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in (
            client.get(url).content
        )
    icon = (Path(settings.BASE_DIR) / "static" / "favicon.svg").read_text()
    assert icon.startswith("<svg") and "viewBox" in icon
