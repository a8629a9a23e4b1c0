import pytest

from quizbank.models import Question

from .factories import ExerciseFactory, HintFactory, QuestionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("boss", password="a-long-test-password")
    client.force_login(user)
    client.user = user
    return client


def test_the_changelist_filters_by_status_and_searches(admin_client):
    QuestionFactory(title="About broadcasting", status="draft")
    QuestionFactory(title="About autograd")
    response = admin_client.get("/admin/quizbank/question/?status__exact=draft&q=broadcasting")
    assert response.status_code == 200
    assert b"About broadcasting" in response.content and b"About autograd" not in response.content


def test_the_change_page_has_inlines_for_hints_quick_checks_and_exercise(admin_client):
    question = QuestionFactory(kind="code")
    HintFactory(question=question)
    ExerciseFactory(question=question)
    content = admin_client.get(f"/admin/quizbank/question/{question.pk}/change/").content
    for prefix in (b"hints-TOTAL_FORMS", b"quick_checks-TOTAL_FORMS", b"exercise-TOTAL_FORMS"):
        assert prefix in content


def test_the_preview_renders_a_draft_as_a_learner_would_see_it(admin_client):
    question = QuestionFactory(status="draft", prompt="Explain **strides**.")
    response = admin_client.get(f"/admin/quizbank/question/{question.pk}/preview/", follow=True)
    assert response.redirect_chain == [(f"/questions/{question.slug}/?preview=1", 302)]
    assert response.status_code == 200
    assert b"<strong>strides</strong>" in response.content
    assert b"Preview: this question is draft" in response.content


def test_the_preview_is_for_staff_only(client, user):
    question = QuestionFactory(status="draft")
    client.force_login(user)
    response = client.get(f"/admin/quizbank/question/{question.pk}/preview/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize(
    ("action", "status"),
    [("send_to_review", "review"), ("publish", "published"), ("archive", "archived")],
)
def test_bulk_actions_move_questions_through_the_workflow(admin_client, action, status):
    questions = QuestionFactory.create_batch(2, status="draft")
    response = admin_client.post(
        "/admin/quizbank/question/",
        {"action": action, "_selected_action": [q.pk for q in questions]},
    )
    assert response.status_code == 302
    assert set(Question.objects.values_list("status", flat=True)) == {status}
    if action == "publish":
        assert all(q.reviewer == admin_client.user for q in Question.objects.all())
        assert all(q.published_at for q in Question.objects.all())


def test_edits_keep_a_history(admin_client):
    question = QuestionFactory(title="First title")
    question.title = "Second title"
    question.save()
    assert [h.title for h in question.history.all()] == ["Second title", "First title"]
    response = admin_client.get(f"/admin/quizbank/question/{question.pk}/history/")
    assert response.status_code == 200 and b"Second title" in response.content
