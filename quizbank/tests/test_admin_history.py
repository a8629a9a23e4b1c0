"""The history tells the truth: a save that changes nothing writes no entry, and each part of a
question (hints, quick checks, exercise) shows only when it changed."""

import pytest

from .factories import ExerciseFactory, HintFactory, QuestionFactory, QuickCheckFactory
from .test_admin import admin_client, yaml_form_data  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


@pytest.fixture
def question():
    question = QuestionFactory(kind="code", title="Double it", concepts=["strides"])
    HintFactory(question=question, order=1, text="Multiply.")
    QuickCheckFactory(question=question, order=1, choices=["`x * 2`", "`x + 2`"], answer=0)
    ExerciseFactory(question=question)
    return question


def entries(question) -> dict[str, int]:
    return {
        "question": question.history.count(),
        "hints": question.hints.model.history.filter(question_id=question.pk).count(),
        "quick checks": question.quick_checks.model.history.filter(question_id=question.pk).count(),
        "exercise": question.exercise.history.count(),
    }


def test_saving_the_page_untouched_writes_no_history(admin_client, question):  # noqa: F811
    before = entries(question)
    updated = question.updated_at
    data = yaml_form_data(admin_client, question)
    url = f"/admin/quizbank/question/{question.pk}/change/"
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    assert entries(question) == before
    question.refresh_from_db()
    assert question.updated_at == updated
    page = admin_client.get(f"/admin/quizbank/question/{question.pk}/history/")
    assert page.context["part_history"] == [] or all(
        row["change"] == "Created" for row in page.context["part_history"]
    )


def test_only_the_part_that_changed_gets_an_entry(admin_client, question):  # noqa: F811
    before = entries(question)
    data = yaml_form_data(admin_client, question)
    data["hints-0-text"] = "Multiply by two."
    url = f"/admin/quizbank/question/{question.pk}/change/"
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    after = entries(question)
    assert after == {**before, "hints": before["hints"] + 1}
    page = admin_client.get(f"/admin/quizbank/question/{question.pk}/history/")
    changed = [(r["part"], r["change"]) for r in page.context["part_history"]]
    assert changed[0] == ("Hint 1", "Changed")
    assert ("Quick check 1", "Changed") not in changed and ("Exercise", "Changed") not in changed


def test_a_title_edit_is_one_question_entry(admin_client, question):  # noqa: F811
    before = entries(question)
    data = yaml_form_data(admin_client, question)
    data["title"] = "Double it, twice"
    admin_client.post(f"/admin/quizbank/question/{question.pk}/change/", data)
    assert entries(question) == {**before, "question": before["question"] + 1}
