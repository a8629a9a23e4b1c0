import pytest

from .factories import ApplicationFactory, QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_topics_come_in_syllabus_order_with_published_question_counts(api):
    later = TopicFactory(slug="training", order=5)
    first = TopicFactory(slug="tensors", order=1)
    QuestionFactory.create_batch(2, primary_topic=first)
    QuestionFactory(primary_topic=first, status="draft")
    QuestionFactory(primary_topic=later, topics=[first])
    body = api.get("/api/topics/").json()
    assert [(t["slug"], t["question_count"]) for t in body] == [("tensors", 3), ("training", 1)]


def test_applications_list_published_question_counts(api):
    cv = ApplicationFactory(slug="computer-vision", name="Computer vision")
    QuestionFactory(applications=[cv])
    QuestionFactory(applications=[cv], status="review")
    assert api.get("/api/applications/").json() == [
        {"slug": "computer-vision", "name": "Computer vision", "question_count": 1}
    ]


def test_the_openapi_schema_and_docs_are_served(api):
    schema = api.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/questions/{slug}/" in schema.content
    docs = api.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger-ui" in docs.content


def test_the_api_root_lists_every_resource(api):
    body = api.get("/api/").json()
    assert set(body) == {
        "questions",
        "topics",
        "applications",
        "quick-checks",
        "submissions",
        "progress",
        "interviews",
        "plans",
        "reviews",
    }
    assert body["submissions"].endswith("/api/submissions/")
