import json

import pytest

from quizbank.models import Question

from .factories import (
    ApplicationFactory,
    ExerciseFactory,
    HintFactory,
    QuestionFactory,
    QuickCheckFactory,
    TopicFactory,
)

pytestmark = pytest.mark.django_db


def slugs(response):
    return [row["slug"] for row in response.json()["results"]]


@pytest.fixture
def catalogue():
    tensors, autograd, gpu = (TopicFactory(slug=s) for s in ("tensors", "autograd", "gpu"))
    cv, nlp = ApplicationFactory(slug="computer-vision"), ApplicationFactory(slug="nlp")
    return {
        "view": QuestionFactory(slug="view", primary_topic=tensors, applications=[cv]),
        "grad": QuestionFactory(
            slug="grad", primary_topic=autograd, difficulty="medium", applications=[nlp]
        ),
        "amp": QuestionFactory(
            slug="amp",
            primary_topic=gpu,
            topics=[autograd],
            difficulty="hard",
            kind="code",
            applications=[cv, nlp],
        ),
        "draft": QuestionFactory(slug="draft", primary_topic=tensors, status="draft"),
    }


def test_it_lists_published_questions_with_the_contract_fields(api, catalogue):
    response = api.get("/api/questions/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 3
    row = next(r for r in body["results"] if r["slug"] == "amp")
    assert row["title"] == catalogue["amp"].title
    assert (row["difficulty"], row["kind"]) == ("hard", "code")
    assert sorted(row["topics"]) == ["autograd", "gpu"]
    assert sorted(row["applications"]) == ["computer-vision", "nlp"]


def test_it_filters_by_one_topic(api, catalogue):
    assert sorted(slugs(api.get("/api/questions/?topic=autograd"))) == ["amp", "grad"]


def test_it_ors_several_values_of_a_facet_repeated_or_comma_separated(api, catalogue):
    repeated = api.get("/api/questions/?difficulty=easy&difficulty=hard")
    comma = api.get("/api/questions/?difficulty=easy,hard")
    assert sorted(slugs(repeated)) == sorted(slugs(comma)) == ["amp", "view"]


def test_it_lists_a_question_once_when_two_of_its_topics_are_selected(api, catalogue):
    assert sorted(slugs(api.get("/api/questions/?topic=autograd&topic=gpu"))) == ["amp", "grad"]


def test_it_ands_different_facets(api, catalogue):
    response = api.get("/api/questions/?application=nlp&kind=code")
    assert slugs(response) == ["amp"]
    assert slugs(api.get("/api/questions/?topic=tensors&difficulty=hard")) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("difficulty=impossible", "difficulty"),
        ("kind=essay", "kind"),
        ("topic=no-such-topic", "topic"),
        ("application=astrology", "application"),
    ],
)
def test_it_rejects_a_bad_filter_value_with_the_field_and_reason(api, catalogue, query, field):
    response = api.get(f"/api/questions/?{query}")
    assert response.status_code == 400
    value = query.split("=")[1]
    assert field in response.json()
    assert value in response.json()[field][0]


def test_it_paginates_and_caps_the_page_size_at_100(api):
    topic = TopicFactory()
    QuestionFactory.create_batch(105, primary_topic=topic)
    first = api.get("/api/questions/?page_size=2").json()
    assert len(first["results"]) == 2 and first["count"] == 105 and "page=2" in first["next"]
    assert len(api.get("/api/questions/?page_size=500").json()["results"]) == 100
    assert api.get("/api/questions/?page=99").status_code == 404


@pytest.mark.parametrize("page_size", [1, 10, 100])
def test_the_list_runs_a_fixed_number_of_queries_whatever_the_page_size(
    api, django_assert_num_queries, page_size
):
    topics = TopicFactory.create_batch(3)
    apps = ApplicationFactory.create_batch(2)
    for i in range(30):
        QuestionFactory(primary_topic=topics[i % 3], topics=topics[:2], applications=apps)
    url = f"/api/questions/?page_size={page_size}&topic={topics[0].slug}"
    # The topics and the applications, cached for this bank version, and the page with its count.
    with django_assert_num_queries(3):
        response = api.get(url)
    assert len(response.json()["results"]) == min(page_size, 30)
    assert response.json()["count"] == 30
    with django_assert_num_queries(1):
        response = api.get(url)
    by_name = [a.slug for a in sorted(apps, key=lambda a: a.name)]
    assert response.json()["results"][0]["applications"] == by_name


def test_a_row_lists_its_topics_in_syllabus_order_and_its_applications_by_name(api):
    late, early = TopicFactory(slug="late", order=9), TopicFactory(slug="early", order=1)
    zoo = ApplicationFactory(slug="zoo", name="Zoo")
    ant = ApplicationFactory(slug="ant", name="Ant")
    QuestionFactory(slug="tagged", primary_topic=late, topics=[early], applications=[zoo, ant])
    row = api.get("/api/questions/").json()["results"][0]
    assert row["topics"] == ["early", "late"] and row["primary_topic"] == "late"
    assert row["applications"] == ["ant", "zoo"]


def test_a_new_topic_can_be_filtered_on_at_once(api):
    QuestionFactory(slug="old", primary_topic=TopicFactory(slug="old-topic"))
    assert slugs(api.get("/api/questions/?topic=old-topic")) == ["old"]  # caches the taxonomy
    assert api.get("/api/questions/?topic=new-topic").status_code == 400
    QuestionFactory(slug="new", primary_topic=TopicFactory(slug="new-topic"))
    assert slugs(api.get("/api/questions/?topic=new-topic")) == ["new"]


def test_the_count_covers_every_page_and_an_empty_list_counts_zero(api):
    QuestionFactory.create_batch(5, primary_topic=TopicFactory(slug="some"))
    assert api.get("/api/questions/?page_size=2&page=3").json()["count"] == 5
    assert api.get("/api/questions/?page_size=2&page=4").status_code == 404
    assert api.get("/api/questions/?page=0").status_code == 404
    assert api.get("/api/questions/?page=x").status_code == 404
    empty = api.get("/api/questions/?difficulty=hard&kind=code&topic=some").json()
    assert empty["count"] == 0 and empty["results"] == []


def test_a_draft_is_404_to_learners_and_anonymous_visitors(api, user, catalogue):
    assert api.get("/api/questions/draft/").status_code == 404
    api.force_authenticate(user)
    assert api.get("/api/questions/draft/").status_code == 404
    assert "draft" not in slugs(api.get("/api/questions/"))


@pytest.mark.parametrize("status", ["draft", "review", "archived"])
def test_staff_see_unpublished_questions(api, staff, status):
    QuestionFactory(slug="wip", status=status)
    api.force_authenticate(staff)
    assert api.get("/api/questions/wip/").status_code == 200
    assert slugs(api.get("/api/questions/")) == ["wip"]


def test_the_detail_carries_everything_a_learner_may_see(api):
    question = QuestionFactory(
        slug="hooks", kind="code", concepts=["register_forward_hook", "handles"]
    )
    HintFactory(question=question, order=1, text="First nudge")
    HintFactory(question=question, order=2, text="Second nudge")
    QuickCheckFactory(question=question, order=1)
    ExerciseFactory(question=question)
    body = api.get("/api/questions/hooks/").json()
    for field in ("prompt", "why_asked", "concepts", "hints", "answer", "applications", "topics"):
        assert field in body
    assert body["hints"] == ["First nudge", "Second nudge"]
    assert body["concepts"] == ["register_forward_hook", "handles"]
    assert body["quick_checks"][0]["choices"] == ["this", "that", "neither"]
    assert body["exercise"]["starter_code"].startswith("def double")
    assert body["exercise"]["queue"] == "cpu"
    assert body["exercise"]["examples"] == [
        {"name": "doubles an example", "code": "out = double(torch.ones(2))"}
    ]


def test_no_public_field_carries_hidden_checks_solutions_or_quick_check_answers(api):
    question = QuestionFactory(slug="secretive", kind="code")
    QuickCheckFactory(
        question=question,
        kind="predict",
        choices=[],
        answer="tensor([42])",
        explanation="EXPLANATION-ONLY-AFTER-ANSWERING",
    )
    ExerciseFactory(
        question=question,
        solution_code="def double(x):\n    return x * 2  # REFERENCE-SOLUTION-MARKER\n",
        wrong_solutions={"w": "WRONG-SOLUTION-MARKER = 1\n"},
    )
    bodies = [
        api.get("/api/questions/secretive/").content.decode(),
        api.get("/api/questions/").content.decode(),
        api.get("/api/schema/").content.decode(),
    ]
    for body in bodies:
        for secret in (
            "REFERENCE-SOLUTION-MARKER",
            "SECRET_INPUT",
            "hidden: doubles",
            "WRONG-SOLUTION-MARKER",
            "tensor([42])",
            "EXPLANATION-ONLY-AFTER-ANSWERING",
            "solution_code",
            "wrong_solutions",
        ):
            assert secret not in body
    detail = json.loads(bodies[0])
    assert set(detail["quick_checks"][0]) == {"id", "order", "kind", "prompt", "choices"}


def test_unsafe_methods_are_not_allowed_on_questions(api, staff, catalogue):
    api.force_authenticate(staff)
    assert api.delete("/api/questions/view/").status_code == 405
    assert api.post("/api/questions/", {"slug": "x"}).status_code == 405
    assert Question.objects.filter(slug="view").exists()


def test_the_detail_runs_a_fixed_number_of_queries(api, django_assert_num_queries):
    question = QuestionFactory(slug="counted", kind="code")
    HintFactory.create_batch(3, question=question)
    QuickCheckFactory.create_batch(2, question=question)
    ExerciseFactory(question=question)
    # question (+ topic, exercise), topics, applications, hints, quick checks, the exercise's
    # version the visitor is graded against
    with django_assert_num_queries(6):
        body = api.get("/api/questions/counted/").json()
    assert body["prompt"] and body["answer"] and len(body["hints"]) == 3


def test_a_request_reads_the_bank_version_once_and_sees_a_change_at_the_next(api, settings):
    from django.core.cache import cache

    from quizbank.caching import BANK_VERSION_KEY

    reads = []
    real_get = cache.get

    def counting_get(key, *args, **kwargs):
        reads.append(key)
        return real_get(key, *args, **kwargs)

    QuestionFactory(slug="first", primary_topic=TopicFactory(slug="old"))
    api.get("/api/questions/?topic=old")  # fills the taxonomy for this version
    cache.get = counting_get
    try:
        api.get("/api/questions/?topic=old&page=1")
        body = api.get("/api/questions/?topic=old").json()
    finally:
        cache.get = real_get
    assert reads.count(BANK_VERSION_KEY) == 2  # once per request
    assert body["results"][0]["topics"] == ["old"]
    TopicFactory(slug="new")  # a write outside any request moves the version on
    assert api.get("/api/questions/?topic=new").status_code == 200


def test_each_row_links_to_its_own_question(api, catalogue):
    rows = api.get("/api/questions/").json()["results"]
    for row in rows:
        assert row["url"] == f"http://testserver/api/questions/{row['slug']}/"
        assert api.get(row["url"]).json()["slug"] == row["slug"]
