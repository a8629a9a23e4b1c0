from datetime import timedelta

import pytest
from django.utils import timezone

from practice.models import MockInterview, ReviewCard, Submission
from quizbank.tests.factories import (
    HintFactory,
    QuestionFactory,
    QuickCheckFactory,
    TopicFactory,
)

pytestmark = pytest.mark.django_db

RIGHT = "def double(x):\n    return x * 2\n"


@pytest.fixture
def bank(db):
    basics = TopicFactory(slug="basics", order=1)
    other = TopicFactory(slug="other", order=2)
    first = QuestionFactory(slug="what-is-a-tensor", primary_topic=basics, difficulty="easy")
    QuickCheckFactory(question=first, order=1, answer=1)
    QuickCheckFactory(question=first, order=2, answer=0)
    HintFactory(question=first, order=1, text="Think of arrays.")
    HintFactory(question=first, order=2, text="With a device.")
    second = QuestionFactory(
        slug="why-zero-grad", primary_topic=basics, difficulty="medium", answer="They add up."
    )
    QuestionFactory(slug="elsewhere", primary_topic=other, difficulty="easy")
    QuestionFactory(slug="too-hard", primary_topic=basics, difficulty="hard")
    return first, second


def start(api, **body):
    body = {"topics": ["basics"], "difficulty": ["easy", "medium"], "questions": 5, **body}
    return api.post("/api/interviews/", {"minutes": 30, **body}, format="json")


def test_starting_an_interview_picks_matching_questions_easiest_first(api, user, bank):
    api.force_authenticate(user)
    response = start(api)
    assert response.status_code == 201
    body = response.json()
    assert body["questions"] == ["what-is-a-tensor", "why-zero-grad"]
    assert body["current"] == "what-is-a-tensor" and body["status"] == "active"
    interview = MockInterview.objects.get(pk=body["id"])
    assert interview.ends_at - interview.started_at == timedelta(minutes=30)
    assert body["ends_at"].startswith(interview.ends_at.strftime("%Y-%m-%dT%H:%M"))


def test_limits_and_unknown_topics_are_400(api, user, bank):
    api.force_authenticate(user)
    assert start(api, questions=0).status_code == 400
    assert start(api, minutes=181).status_code == 400
    assert "nope" in str(start(api, topics=["nope"]).json()["topics"])
    assert start(api, topics=["other"], difficulty=["hard"]).status_code == 400
    assert not MockInterview.objects.exists()


def test_anonymous_visitors_cannot_start_one(api, bank):
    assert start(api).status_code in (401, 403)
    assert "/accounts/login/" in api.get("/interviews/new/")["Location"]


def test_another_users_interview_is_404_everywhere(api, client, user, bank, django_user_model):
    other = django_user_model.objects.create_user("other")
    api.force_authenticate(other)
    theirs = start(api).json()["id"]
    api.force_authenticate(user)
    assert api.get(f"/api/interviews/{theirs}/").status_code == 404
    assert api.post(f"/api/interviews/{theirs}/finish/").status_code == 404
    answer = {"question": "what-is-a-tensor", "skip": True}
    assert api.post(f"/api/interviews/{theirs}/answer/", answer, format="json").status_code == 404
    assert api.get("/api/interviews/").json()["results"] == []
    client.force_login(user)
    assert client.get(f"/interviews/{theirs}/").status_code == 404
    assert client.post(f"/interviews/{theirs}/finish/").status_code == 404
    assert MockInterview.objects.get(pk=theirs).active


def test_a_full_interview_through_the_api_gives_a_report(api, user, bank):
    first, second = bank
    a, b = first.quick_checks.all()
    api.force_authenticate(user)
    pk = start(api).json()["id"]
    # Questions come in order.
    early = {"question": "why-zero-grad", "text": "x"}
    assert api.post(f"/api/interviews/{pk}/answer/", early, format="json").status_code == 400
    hint = api.post(f"/api/interviews/{pk}/hint/", {"question": first.slug}, format="json")
    assert hint.json() == {"order": 1, "text": "Think of arrays."}
    answer = {
        "question": first.slug,
        "text": "An n-dimensional array.",
        "checks": {str(a.pk): 1, str(b.pk): 2},
    }
    body = api.post(f"/api/interviews/{pk}/answer/", answer, format="json").json()
    assert body["current"] == "why-zero-grad"
    answer = {"question": "why-zero-grad", "text": "Gradients accumulate."}
    assert (
        api.post(f"/api/interviews/{pk}/answer/", answer, format="json").json()["current"] is None
    )
    report = api.post(f"/api/interviews/{pk}/finish/").json()
    assert report["status"] == "finished"
    one, two = report["questions"]
    assert one["outcome"] == "partial" and (one["checks_correct"], one["checks_total"]) == (1, 2)
    # Half the checks is 5 points; a hint costs 2.
    assert one["points"] == 3 and one["hints_used"] == 1
    assert one["your_answer"] == "An n-dimensional array." and one["time_spent_seconds"] >= 0
    assert two["outcome"] == "answered" and two["points"] is None
    assert two["model_answer"] == "They add up."
    assert report["score"] == {"points": 3, "max_points": 10, "percent": 30}
    assert [q["question"] for q in report["review_next"]] == [first.slug, "why-zero-grad"]
    # The wrong quick check is practice like any other: the question is up for review.
    assert ReviewCard.objects.filter(user=user, question=first).exists()
    detail = api.get(f"/api/interviews/{pk}/").json()
    assert detail["report"]["score"]["percent"] == 30


def test_the_clock_is_the_servers_an_answer_after_the_end_is_refused(api, user, bank):
    api.force_authenticate(user)
    pk = start(api).json()["id"]
    MockInterview.objects.filter(pk=pk).update(ends_at=timezone.now() - timedelta(seconds=1))
    answer = {"question": "what-is-a-tensor", "text": "late"}
    response = api.post(f"/api/interviews/{pk}/answer/", answer, format="json")
    assert response.status_code == 409
    assert response.json()["report"]["status"] == "timed_out"
    interview = MockInterview.objects.get(pk=pk)
    assert interview.status == "timed_out" and interview.finished_at == interview.ends_at
    assert interview.items.get(order=1).answer_text == ""
    hint = api.post(f"/api/interviews/{pk}/hint/", {"question": "what-is-a-tensor"}, format="json")
    assert hint.status_code == 409


def test_an_interview_past_its_end_is_over_when_listed(api, user, bank):
    api.force_authenticate(user)
    pk = start(api).json()["id"]
    MockInterview.objects.filter(pk=pk).update(ends_at=timezone.now() - timedelta(minutes=1))
    assert api.get("/api/interviews/").json()["results"][0]["status"] == "timed_out"


def test_a_code_question_is_graded_as_a_submission(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    pk = start(api, topics=[], difficulty=[], questions=1).json()["id"]
    answer = {"question": "double-it", "code": RIGHT}
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/interviews/{pk}/answer/", answer, format="json")
    assert response.status_code == 200
    submission = Submission.objects.get(user=user)
    assert submission.status == "passed"
    report = api.post(f"/api/interviews/{pk}/finish/").json()
    row = report["questions"][0]
    assert row["outcome"] == "passed" and row["points"] == 10 and row["your_code"] == RIGHT
    assert row["submission"] == submission.pk


def test_the_pages_take_an_interview_from_a_preset_to_its_report(client, user, bank):
    TopicFactory(slug="fundamentals")
    QuestionFactory(slug="fundamentals-q", primary_topic=TopicFactory(slug="tensors"))
    client.force_login(user)
    assert "30-minute fundamentals screen" in client.get("/interviews/new/").content.decode()
    response = client.post("/interviews/new/", {"preset": "fundamentals-screen"})
    interview = MockInterview.objects.get(user=user)
    assert response["Location"] == f"/interviews/{interview.pk}/"
    assert interview.title == "30-minute fundamentals screen" and interview.minutes == 30
    body = client.get(response["Location"]).content.decode()
    assert "Question 1 of 1" in body and "data-ends-at" in body
    assert "badge easy" not in body and "Easy" not in body
    client.post(
        f"/interviews/{interview.pk}/answer/", {"question": "fundamentals-q", "text": "Mine"}
    )
    client.post(f"/interviews/{interview.pk}/finish/")
    body = client.get(f"/interviews/{interview.pk}/").content.decode()
    assert "Report" in body and "Mine" in body and "The idea, explained." in body
    listing = client.get("/interviews/").content.decode()
    assert "30-minute fundamentals screen" in listing and "nothing graded" in listing


def test_a_preset_takes_its_topics_as_primary_and_its_stated_mix_of_code(client, user):
    tensors, llm = TopicFactory(slug="tensors"), TopicFactory(slug="llm")
    for i in range(4):
        QuestionFactory(slug=f"code-{i}", primary_topic=tensors, kind="code", difficulty="easy")
        QuestionFactory(slug=f"concept-{i}", primary_topic=tensors, difficulty="medium")
        # About LLMs, merely tagged with tensors: not a fundamentals question.
        QuestionFactory(slug=f"tagged-{i}", primary_topic=llm, topics=[tensors], difficulty="easy")
    client.force_login(user)
    page = client.get("/interviews/new/").content.decode()
    assert "4 questions in 30 minutes: 1 code exercise and 3 concept questions" in page
    for _ in range(5):  # the choice is random: every draw keeps to the rule
        client.post("/interviews/new/", {"preset": "fundamentals-screen"})
    for interview in MockInterview.objects.filter(user=user):
        slugs = [i.question.slug for i in interview.items.all()]
        assert len(slugs) == 4 and not [s for s in slugs if s.startswith("tagged")]
        assert len([s for s in slugs if s.startswith("code")]) == 1


def test_a_preset_makes_up_for_missing_concept_questions_with_code(client, user):
    tensors = TopicFactory(slug="tensors")
    QuestionFactory(slug="concept", primary_topic=tensors, difficulty="easy")
    for i in range(4):
        QuestionFactory(slug=f"code-{i}", primary_topic=tensors, kind="code", difficulty="easy")
    client.force_login(user)
    client.post("/interviews/new/", {"preset": "fundamentals-screen"})
    slugs = {i.question.slug for i in MockInterview.objects.get(user=user).items.all()}
    assert len(slugs) == 4 and "concept" in slugs


def test_a_custom_interview_from_the_page_and_a_late_answer(client, user, bank):
    client.force_login(user)
    response = client.post(
        "/interviews/new/",
        {"topics": ["basics"], "difficulty": ["easy"], "questions": 3, "minutes": 10},
    )
    interview = MockInterview.objects.get(user=user)
    assert [i.question.slug for i in interview.items.all()] == ["what-is-a-tensor"]
    MockInterview.objects.update(ends_at=timezone.now() - timedelta(seconds=1))
    response = client.post(
        f"/interviews/{interview.pk}/answer/", {"question": "what-is-a-tensor"}, follow=True
    )
    assert "Time is up" in response.content.decode()
    assert MockInterview.objects.get().status == "timed_out"


def test_the_list_runs_a_fixed_number_of_queries(client, user, bank, django_assert_num_queries):
    client.force_login(user)
    for _ in range(2):
        client.post("/interviews/new/", {"preset": "fundamentals-screen"})
        client.post("/interviews/new/", {"topics": ["basics"], "questions": 2, "minutes": 10})
    with django_assert_num_queries(6):  # the page's count included
        assert client.get("/interviews/").status_code == 200


def test_a_question_archived_mid_interview_is_withdrawn_never_shown_never_scored(
    api, client, user, bank
):
    first, second = bank
    api.force_authenticate(user)
    pk = start(api).json()["id"]
    second.title = "Reworked title, not for learners yet"
    second.answer = "A reworked answer."
    second.status = second.Status.ARCHIVED
    second.save()
    answer = {"question": first.slug, "text": "An array.", "checks": {}}
    body = api.post(f"/api/interviews/{pk}/answer/", answer, format="json").json()
    assert body["current"] is None  # the archived question is not asked
    client.force_login(user)
    page = client.get(f"/interviews/{pk}/").content.decode()
    assert "Reworked title" not in page
    late = {"question": second.slug, "text": "x"}
    assert api.post(f"/api/interviews/{pk}/answer/", late, format="json").status_code in (400, 409)
    report = api.post(f"/api/interviews/{pk}/finish/").json()
    withdrawn = report["questions"][1]
    assert withdrawn["outcome"] == "withdrawn" and withdrawn["points"] is None
    assert withdrawn["title"] != second.title and withdrawn["model_answer"] == ""
    assert second.slug not in [q["question"] for q in report["review_next"]]
    assert report["score"]["max_points"] == 10  # only the first question is scored
    for text in (
        client.get(f"/interviews/{pk}/").content.decode(),
        b"".join(client.get("/api/me/export/").streaming_content).decode(),
    ):
        assert "Reworked" not in text and "A reworked answer." not in text


def test_a_question_archived_after_the_interview_is_hidden_in_its_report(api, client, user, bank):
    first, second = bank
    api.force_authenticate(user)
    pk = start(api).json()["id"]
    api.post(f"/api/interviews/{pk}/answer/", {"question": first.slug, "text": "a"}, format="json")
    api.post(f"/api/interviews/{pk}/answer/", {"question": second.slug, "text": "b"}, format="json")
    api.post(f"/api/interviews/{pk}/finish/")
    second.status = second.Status.ARCHIVED
    second.save()
    report = api.get(f"/api/interviews/{pk}/").json()["report"]
    row = report["questions"][1]
    assert row["your_answer"] == "b" and row["model_answer"] == "" and row["title"] != second.title


def test_interviews_started_a_day_are_limited(api, client, user, bank, settings):
    """100 interviews had been started in 4.7 s, and 1,000 made the export 120 MB."""
    settings.INTERVIEWS_PER_DAY = 2
    api.force_authenticate(user)
    assert [start(api).status_code for _ in range(2)] == [201, 201]
    refused = start(api)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "tomorrow" in refused.json()["detail"]
    client.force_login(user)
    page = client.post(
        "/interviews/new/", {"questions": 1, "minutes": 10, "topics": []}, follow=True
    )
    assert "tomorrow" in page.content.decode()
    assert MockInterview.objects.filter(user=user).count() == 2
    # yesterday's do not count
    MockInterview.objects.update(started_at=timezone.now() - timedelta(days=1))
    assert start(api).status_code == 201


def test_the_list_shows_a_page_at_a_time(client, user, bank, settings):
    settings.INTERVIEWS_PER_DAY = 100
    client.force_login(user)
    for _ in range(23):
        client.post("/interviews/new/", {"topics": ["basics"], "questions": 1, "minutes": 10})
    first = client.get("/interviews/")
    assert len(first.context["rows"]) == 20 and "Page 1 of 2" in first.content.decode()
    second = client.get("/interviews/?page=2")
    assert len(second.context["rows"]) == 3
    assert len(client.get("/interviews/?page=99999999999999999999").context["rows"]) == 3
