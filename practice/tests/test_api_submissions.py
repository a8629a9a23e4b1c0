import pytest

from practice.models import Submission

pytestmark = pytest.mark.django_db

RIGHT = "def double(x):\n    return x * 2\n"
WRONG = "def double(x):\n    return x + 2\n"


def submit(api, code, question="double-it", capture=None):
    """POST, then let the commit happen (which enqueues, and here grades), then read it back."""
    with capture(execute=True):
        response = api.post(
            "/api/submissions/", {"question": question, "code": code}, format="json"
        )
    if response.status_code == 201:
        response.data = api.get(f"/api/submissions/{response.json()['id']}/").json()
    return response


def test_a_right_solution_is_graded_passed(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    response = submit(api, RIGHT, capture=django_capture_on_commit_callbacks)
    assert response.status_code == 201
    body = response.data
    assert body["status"] == "passed", body
    assert [c["status"] for c in body["checks"]] == ["passed"] * 4
    assert body["tries"] == 1 and body["finished_at"] and body["queue"] == "cpu"
    assert api.get(f"/api/submissions/{body['id']}/").json()["status"] == "passed"


def test_a_wrong_solution_fails_naming_the_checks_without_leaking_hidden_inputs(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    body = submit(api, WRONG, capture=django_capture_on_commit_callbacks).data
    assert body["status"] == "failed"
    by_name = {c["name"]: c for c in body["checks"]}
    assert by_name["doubles an example"]["status"] == "failed"
    assert by_name["doubles a hidden tensor"]["status"] == "failed"
    assert by_name["doubles a hidden tensor"]["message"]
    assert "13" not in by_name["doubles a hidden tensor"]["message"]
    assert "SECRET_INPUT" not in str(body)


def test_anonymous_visitors_cannot_submit(api, exercise):
    response = api.post(
        "/api/submissions/", {"question": "double-it", "code": RIGHT}, format="json"
    )
    assert response.status_code in (401, 403)
    assert not Submission.objects.exists()


def test_token_authentication_works(api, user, exercise, eager, django_capture_on_commit_callbacks):
    from accounts.services import token_create

    _, key = token_create(user=user, name="test")
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert submit(api, RIGHT, capture=django_capture_on_commit_callbacks).status_code == 201


def test_another_users_submission_is_404_and_not_listed(api, user, django_user_model, exercise):
    other = django_user_model.objects.create_user("someone-else", password="x-long-password-1")
    theirs = Submission.objects.create(user=other, question=exercise.question, code=RIGHT)
    mine = Submission.objects.create(user=user, question=exercise.question, code=RIGHT)
    api.force_authenticate(user)
    assert api.get(f"/api/submissions/{theirs.pk}/").status_code == 404
    assert [row["id"] for row in api.get("/api/submissions/").json()["results"]] == [mine.pk]


def test_code_over_64_kib_is_rejected_with_400_and_nothing_stored(api, user, exercise):
    api.force_authenticate(user)
    code = "x = 1\n" + "#" * (64 * 1024)
    response = api.post("/api/submissions/", {"question": "double-it", "code": code}, format="json")
    assert response.status_code == 400
    assert "64 KiB" in response.json()["code"][0]
    assert not Submission.objects.exists()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"question": "no-such-question", "code": RIGHT}, "question"),
        ({"question": "double-it"}, "code"),
        ({"question": "double-it", "code": ""}, "code"),
        ({"code": RIGHT}, "question"),
    ],
)
def test_bad_input_is_400_naming_the_field(api, user, exercise, payload, field):
    api.force_authenticate(user)
    response = api.post("/api/submissions/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_concept_question_takes_no_submissions(api, user):
    from quizbank.tests.factories import QuestionFactory

    QuestionFactory(slug="just-talk")
    api.force_authenticate(user)
    response = api.post(
        "/api/submissions/", {"question": "just-talk", "code": RIGHT}, format="json"
    )
    assert response.status_code == 400
    assert "no code exercise" in response.json()["question"][0]


def test_drafts_take_no_submissions_from_learners(api, user, exercise):
    exercise.question.status = "draft"
    exercise.question.save()
    api.force_authenticate(user)
    response = api.post(
        "/api/submissions/", {"question": "double-it", "code": RIGHT}, format="json"
    )
    assert response.status_code == 400


def test_submissions_are_throttled_per_user_with_retry_after(
    api, user, exercise, eager, settings, django_capture_on_commit_callbacks
):
    settings.SUBMISSION_RATE = "2/min"
    api.force_authenticate(user)
    for _ in range(2):
        assert submit(api, RIGHT, capture=django_capture_on_commit_callbacks).status_code == 201
    response = submit(api, RIGHT, capture=django_capture_on_commit_callbacks)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert Submission.objects.count() == 2
    # reading is not throttled
    assert api.get("/api/submissions/").status_code == 200


def test_a_job_the_grader_refuses_ends_in_error_with_its_reason(
    api, user, exercise, eager, django_capture_on_commit_callbacks, caplog
):
    # Checks saved past validation (straight into the table): the grader refuses the job.
    exercise.versions.update(checks=[{"name": "nonsense"}])
    api.force_authenticate(user)
    body = submit(api, RIGHT, capture=django_capture_on_commit_callbacks).data
    assert body["status"] == "error"
    assert body["message"] == (
        "This exercise is being fixed; your attempt is not counted; staff have been told."
    )
    assert body["finished_at"]
    assert "exercise double-it is broken" in caplog.text
    exercise.refresh_from_db()
    assert "compare" in exercise.fault  # the grader's reason, for the staff: no compare
    assert exercise.fault_at is not None
    # The exercise's fault is not the learner's: nothing is scheduled for review.
    assert not user.review_cards.exists()


def test_in_embedded_mode_a_submission_stuck_past_its_deadline_ends_in_error(api, user, eager):
    from datetime import timedelta

    from django.utils import timezone

    from practice.tests.factories import SubmissionFactory

    stuck = SubmissionFactory(
        user=user, status="running", deadline_at=timezone.now() - timedelta(seconds=1)
    )
    api.force_authenticate(user)
    body = api.get(f"/api/submissions/{stuck.pk}/").json()
    assert body["status"] == "error"
    assert "server stopped while it was grading" in body["message"]
    assert body["finished_at"]


def test_the_page_stops_polling_an_overdue_submission_and_says_why(client, user, settings):
    from datetime import timedelta

    from django.utils import timezone

    from practice.tests.factories import SubmissionFactory

    settings.CELERY_TASK_ALWAYS_EAGER = False  # with a broker the sweep, not the page, settles it
    late = SubmissionFactory(
        user=user, status="queued", deadline_at=timezone.now() - timedelta(seconds=5)
    )
    waiting = SubmissionFactory(user=user, question=late.question, status="queued")
    client.force_login(user)
    page = client.get(f"/submissions/{late.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "taking longer than it should" in page
    assert 'hx-trigger="load delay:1s"' not in page
    page = client.get(
        f"/submissions/{waiting.pk}/", headers={"HX-Request": "true"}
    ).content.decode()
    assert 'hx-trigger="load delay:1s"' in page


def test_interview_code_answers_spend_the_same_budget_as_the_api(
    api, user, exercise, settings, django_capture_on_commit_callbacks
):
    """Mock interviews got around the limit: 48 graded submissions in 21 s at 20 a minute."""
    settings.SUBMISSION_RATE = "2/min"
    api.force_authenticate(user)
    assert submit(api, RIGHT, capture=django_capture_on_commit_callbacks).status_code == 201
    topics = [exercise.question.primary_topic.slug]
    made = []
    for _ in range(2):
        body = {"topics": topics, "difficulty": [], "questions": 1, "minutes": 30}
        pk = api.post("/api/interviews/", body, format="json").json()["id"]
        answer = {"question": exercise.question.slug, "code": RIGHT}
        made.append(api.post(f"/api/interviews/{pk}/answer/", answer, format="json"))
    assert made[0].status_code == 200
    assert made[1].status_code == 429 and int(made[1]["Retry-After"]) > 0
    assert Submission.objects.count() == 2


def test_a_learner_cannot_hold_more_than_the_waiting_bound(api, user, exercise, settings):
    """Without a worker the submissions wait: past the bound, nothing more is stored."""
    settings.SUBMISSIONS_WAITING_MAX = 2
    api.force_authenticate(user)
    statuses = [
        api.post("/api/submissions/", {"question": "double-it", "code": RIGHT}, format="json")
        for _ in range(3)
    ]
    assert [r.status_code for r in statuses] == [201, 201, 429]
    assert "waiting for their verdicts" in statuses[2].json()["detail"]
    assert Submission.objects.filter(user=user).count() == 2


def test_a_retried_post_with_the_same_idempotency_key_makes_one_submission(api, user, exercise):
    """A POST told it failed (a 503, a reset connection) had in fact been stored and graded."""
    api.force_authenticate(user)
    body = {"question": "double-it", "code": RIGHT}
    first = api.post("/api/submissions/", body, format="json", HTTP_IDEMPOTENCY_KEY="try-1")
    again = api.post("/api/submissions/", body, format="json", HTTP_IDEMPOTENCY_KEY="try-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Submission.objects.filter(user=user).count() == 1
    other = api.post("/api/submissions/", body, format="json", HTTP_IDEMPOTENCY_KEY="try-2")
    assert other.status_code == 201 and Submission.objects.filter(user=user).count() == 2
    reused = {"question": "double-it", "code": RIGHT + "# changed\n"}
    clash = api.post("/api/submissions/", reused, format="json", HTTP_IDEMPOTENCY_KEY="try-1")
    assert clash.status_code == 400 and "Idempotency-Key" in clash.json()


def test_idempotency_keys_are_per_learner(api, user, exercise, django_user_model):
    body = {"question": "double-it", "code": RIGHT}
    api.force_authenticate(user)
    mine = api.post("/api/submissions/", body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    api.force_authenticate(django_user_model.objects.create_user("other"))
    theirs = api.post("/api/submissions/", body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert theirs.status_code == 201 and theirs.json()["id"] != mine.json()["id"]
