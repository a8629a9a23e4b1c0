"""Every admin action needs the model permission it exercises: a staff account that may only
view questions is offered no action, and a request that names one anyway changes nothing."""

import pytest
from django.contrib.auth.models import Permission

from quizbank.models import Question

from .factories import ExerciseFactory, QuestionFactory

pytestmark = pytest.mark.django_db

ACTIONS = ["send_to_review", "publish", "archive", "verify"]


@pytest.fixture
def viewer(client, django_user_model):
    user = django_user_model.objects.create_user("viewer", password="a-long-test-password")
    user.is_staff = True
    user.save()
    user.user_permissions.add(Permission.objects.get(codename="view_question"))
    client.force_login(user)
    return client


def offered(client) -> set[str]:
    response = client.get("/admin/quizbank/question/")
    assert response.status_code == 200
    form = response.context["action_form"]
    if form is None:  # no action at all: the changelist draws no action bar
        return set()
    return {name for name, _ in form.fields["action"].choices if name}


def test_a_view_only_account_is_offered_no_action(viewer):
    assert offered(viewer) == set()


@pytest.mark.parametrize("action", ACTIONS)
def test_a_view_only_account_cannot_run_the_action(viewer, action, settings):
    question = QuestionFactory(status="draft", kind="code")
    ExerciseFactory(question=question)
    response = viewer.post(
        "/admin/quizbank/question/", {"action": action, "_selected_action": [question.pk]}
    )
    assert response.status_code == 403
    question.refresh_from_db()
    assert question.status == "draft"
    assert question.reviewer is None


def test_change_permission_offers_the_workflow_actions_but_not_verify(viewer, django_user_model):
    user = django_user_model.objects.get(username="viewer")
    user.user_permissions.add(Permission.objects.get(codename="change_question"))
    assert offered(viewer) == {"send_to_review", "publish", "archive"}
    question = QuestionFactory(status="draft")
    viewer.post(
        "/admin/quizbank/question/", {"action": "archive", "_selected_action": [question.pk]}
    )
    assert Question.objects.get(pk=question.pk).status == "archived"


def test_the_verify_permission_offers_verify(viewer, django_user_model):
    user = django_user_model.objects.get(username="viewer")
    user.user_permissions.add(Permission.objects.get(codename="verify_exercise"))
    assert offered(viewer) == {"verify"}
