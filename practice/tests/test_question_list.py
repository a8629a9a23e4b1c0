"""The question list page: the API's FilterSet, facets with counts, the learner's own facets, htmx
partial updates, and a number of queries that does not grow with the page."""

import pytest
from django.core.management import call_command

from practice.models import Activity
from practice.services import learning
from quizbank.models import Question
from quizbank.tests.factories import ApplicationFactory, QuestionFactory, TopicFactory
from quizbank.tests.test_admin import change_form_data

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def bank(db):
    tensors = TopicFactory(slug="tensors", name="Tensors", order=1)
    autograd = TopicFactory(slug="autograd", name="Autograd", order=2)
    vision = ApplicationFactory(slug="vision", name="Computer vision")
    questions = {
        "easy-tensor": QuestionFactory(slug="easy-tensor", primary_topic=tensors),
        "hard-tensor": QuestionFactory(
            slug="hard-tensor", primary_topic=tensors, difficulty="hard", applications=[vision]
        ),
        "easy-grad": QuestionFactory(slug="easy-grad", primary_topic=autograd, kind="code"),
        "both": QuestionFactory(slug="both", primary_topic=autograd, topics=[tensors]),
    }
    QuestionFactory(slug="a-draft", primary_topic=tensors, status="draft")
    return questions


def facet(response, name):
    groups = {g["name"]: g["options"] for g in response.context["facets"]}
    return {o["value"]: (o["count"], o["selected"]) for o in groups[name]}


def slugs(response):
    return [q.slug for q in response.context["page"]]


def test_facets_count_what_each_option_would_give_with_the_other_filters(client, bank):
    response = client.get("/questions/?topic=tensors&difficulty=easy")
    assert sorted(slugs(response)) == ["both", "easy-tensor"]
    # Topic counts keep difficulty=easy but not the topic filter itself, and vice versa.
    assert facet(response, "topic") == {"tensors": (2, True), "autograd": (2, False)}
    assert facet(response, "difficulty") == {
        "easy": (2, True),
        "medium": (0, False),
        "hard": (1, False),
    }
    assert facet(response, "kind") == {"concept": (2, False), "code": (0, False)}
    assert facet(response, "application") == {"vision": (0, False)}


def test_the_page_keeps_the_filters_in_the_url_and_ticks_them(client, bank):
    body = client.get("/questions/?topic=tensors&kind=concept&search=").content.decode()
    assert 'name="topic" value="tensors" checked' in body
    assert 'name="kind" value="concept" checked' in body
    assert 'name="topic" value="autograd" checked' not in body


def test_an_htmx_request_gets_the_results_and_the_counts_out_of_band(client, bank):
    response = client.get("/questions/?difficulty=hard", **HTMX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="results"')
    assert "<html" not in body and "hard-tensor" in body and "easy-tensor" not in body
    assert '<span class="count" id="count-topic-tensors" hx-swap-oob="true">1</span>' in body
    assert response["Vary"] and "HX-Request" in response["Vary"]


def test_a_history_restore_gets_the_whole_page(client, bank):
    headers = {**HTMX, "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
    assert "<html" in client.get("/questions/?difficulty=hard", **headers).content.decode()


def test_a_learner_filters_by_what_they_solved_attempted_or_bookmarked(client, user, bank):
    learning.review_rate(user=user, question=bank["easy-tensor"], rating=Activity.Rating.GOOD)
    learning.answer_reveal(user=user, question=bank["hard-tensor"])
    learning.bookmark_toggle(user=user, question=bank["both"])
    client.force_login(user)
    response = client.get("/questions/")
    assert facet(response, "progress") == {
        "solved": (1, False),
        "attempted": (1, False),
        "not_started": (2, False),
    }
    assert facet(response, "bookmarked") == {"true": (1, False)}
    assert slugs(client.get("/questions/?progress=solved")) == ["easy-tensor"]
    assert sorted(slugs(client.get("/questions/?progress=solved,attempted"))) == [
        "easy-tensor",
        "hard-tensor",
    ]
    assert sorted(slugs(client.get("/questions/?progress=not_started"))) == ["both", "easy-grad"]
    assert slugs(client.get("/questions/?bookmarked=true")) == ["both"]
    body = client.get("/questions/").content.decode()
    assert "✓ Solved" in body and "Attempted" in body and "★" in body


def test_the_learners_facets_are_theirs_alone(client, user, django_user_model, bank):
    learning.bookmark_toggle(user=user, question=bank["both"])
    other = django_user_model.objects.create_user("other")
    client.force_login(other)
    assert slugs(client.get("/questions/?bookmarked=true")) == []
    assert "★" not in client.get("/questions/").content.decode()


def test_a_visitor_has_no_progress_facets_and_the_filter_is_ignored(client, bank):
    response = client.get("/questions/?progress=solved")
    assert "progress" not in {g["name"] for g in response.context["facets"]}
    assert len(slugs(response)) == 4
    assert b"to filter by what you solved" in response.content


def test_the_api_takes_the_same_learner_filters(api, user, bank):
    learning.review_rate(user=user, question=bank["easy-grad"], rating=Activity.Rating.AGAIN)
    api.force_authenticate(user)
    body = api.get("/api/questions/?progress=attempted").json()
    assert [q["slug"] for q in body["results"]] == ["easy-grad"]
    assert api.get("/api/questions/?progress=lost").status_code == 400


def test_the_list_pages_by_twenty(client, bank):
    topic = TopicFactory(slug="many", order=9)
    for n in range(25):
        QuestionFactory(slug=f"many-{n:02}", primary_topic=topic)
    first = client.get("/questions/?topic=many")
    assert len(slugs(first)) == 20 and b"page 1 of 2" in first.content
    assert b'href="?topic=many&amp;page=2"' in first.content
    assert len(slugs(client.get("/questions/?topic=many&page=2"))) == 5


@pytest.mark.parametrize("signed_in", [False, True])
def test_the_list_runs_a_fixed_number_of_queries(
    client, user, bank, signed_in, django_assert_num_queries
):
    """Anonymous: the topics (validation, cached per bank version), rows, the rows' topics and
    applications, and four facets (the kind facet gives the list's count); the next request with
    the same filters reads the topics, the counts and the rendered rows from the cache: no query.
    Signed in: plus session and user, the learner's own two facets, and whether they hide
    difficulty; only the counts are cached (the rows carry the learner's progress)."""
    for n in range(30):
        QuestionFactory(slug=f"more-{n:02}", applications=[bank["hard-tensor"].applications.get()])
    if signed_in:
        client.force_login(user)
        for question in list(bank.values())[:2]:
            learning.bookmark_toggle(user=user, question=question)
            learning.answer_reveal(user=user, question=question)
    with django_assert_num_queries(13 if signed_in else 8):
        response = client.get("/questions/?topic=tensors&difficulty=easy,hard&page=1")
    assert response.status_code == 200
    with django_assert_num_queries(8 if signed_in else 0):
        client.get("/questions/?topic=tensors&difficulty=easy,hard", **HTMX)
    with django_assert_num_queries(8 if signed_in else 0):
        client.get("/questions/?difficulty=hard,easy&topic=tensors&page=1")


def test_the_cached_list_changes_when_a_question_is_published_or_edited_in_the_admin(
    client, admin_client, bank, django_capture_on_commit_callbacks
):
    """The counts and an anonymous visitor's rows are cached (per bank version); curation must
    never leave either stale."""
    before = client.get("/questions/")
    assert facet(before, "topic") == {"tensors": (3, False), "autograd": (2, False)}
    assert 'href="/questions/a-draft/"' not in before.content.decode()
    draft = Question.objects.get(slug="a-draft")
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            "/admin/quizbank/question/", {"action": "publish", "_selected_action": [draft.pk]}
        )
    published = client.get("/questions/")
    assert facet(published, "topic") == {"tensors": (4, False), "autograd": (2, False)}
    assert 'href="/questions/a-draft/"' in published.content.decode()

    question = bank["easy-tensor"]
    data = change_form_data(admin_client, question)
    data.update(difficulty="medium", topics=[bank["easy-grad"].primary_topic.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/admin/quizbank/question/{question.pk}/change/", data)
    assert response.status_code == 302
    edited = client.get("/questions/")
    assert facet(edited, "difficulty")["medium"] == (1, False)
    assert facet(edited, "topic") == {"tensors": (3, False), "autograd": (3, False)}
    row = edited.content.decode().split('href="/questions/easy-tensor/"')[1].split("</li>")[0]
    assert "Medium" in row and "Autograd" in row and "Tensors" not in row


def test_the_learners_own_filters_are_never_served_from_the_bank_cache(
    client, user, bank, django_assert_num_queries
):
    client.force_login(user)
    learning.bookmark_toggle(user=user, question=bank["easy-tensor"])
    first = client.get("/questions/?bookmarked=true")
    assert facet(first, "topic") == {"tensors": (1, False), "autograd": (0, False)}
    learning.bookmark_toggle(user=user, question=bank["easy-grad"])
    again = client.get("/questions/?bookmarked=true")
    assert facet(again, "topic") == {"tensors": (1, False), "autograd": (1, False)}


def test_a_search_that_finds_nothing_says_so_and_offers_popular_questions(client, bank):
    body = client.get("/questions/?search=pizza+recipe").content.decode()
    assert "0 questions" in body
    assert "No question matches “pizza recipe”" in body
    assert "Popular questions" in body


def test_search_marks_the_words_in_titles_and_shows_where_they_matched(client, bank):
    QuestionFactory(
        slug="broadcast",
        title="Broadcasting <rules>",
        prompt="Intro. How does broadcasting line up shapes?",
        primary_topic=bank["both"].primary_topic,
    )
    body = client.get("/questions/?search=broadcasting").content.decode()
    assert "<mark>Broadcasting</mark> &lt;rules&gt;" in body
    assert "How does <mark>broadcasting</mark> line up shapes?" in body


def test_a_signed_in_search_counts_the_learners_facets(client, bank, django_user_model):
    user = django_user_model.objects.create_user(username="ann", password="pw-123456789")
    client.force_login(user)
    bank["both"].title = "Broadcasting rules"
    bank["both"].save()
    response = client.get("/questions/?search=broadcasting")
    assert slugs(response) == ["both"]
    assert facet(response, "progress")["not_started"] == (1, False)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "kind=code",
        "kind=code,concept&topic=tensors",
        "difficulty=easy&kind=concept",
        "application=vision",
        "topic=autograd&search=tensor",
    ],
)
def test_the_list_count_taken_from_the_kind_facet_is_the_apis_count(client, api, bank, query):
    page = client.get(f"/questions/?{query}").context["page"]
    assert page.paginator.count == api.get(f"/api/questions/?{query}").json()["count"]
    assert page.paginator.count == len(slugs(client.get(f"/questions/?{query}")))


def test_the_cached_list_changes_when_load_bank_adds_or_edits_a_question(
    client, tmp_path, django_capture_on_commit_callbacks
):
    from quizbank.tests.test_bank_files import concept, edit_question, write_bank

    root = write_bank(tmp_path / "bank", {"view-vs-reshape": concept()})
    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_bank", str(root))
    first = client.get("/questions/")
    assert facet(first, "difficulty")["medium"] == (1, False)
    assert "What does view need?" in first.content.decode()
    edit_question(root, difficulty="hard", title="When does view fail?")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_bank", str(root))
    edited = client.get("/questions/")
    assert facet(edited, "difficulty")["medium"] == (0, False)
    assert facet(edited, "difficulty")["hard"] == (1, False)
    assert "When does view fail?" in edited.content.decode()
