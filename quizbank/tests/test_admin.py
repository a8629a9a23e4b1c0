import re

import pytest
from django import forms as django_forms

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


def change_form_data(admin_client, question) -> dict:
    """What the change page would post back unchanged: the question's fields and every inline."""
    import json

    response = admin_client.get(f"/admin/quizbank/question/{question.pk}/change/")
    forms = [("", response.context["adminform"].form)]
    data = {}
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        management = formset.management_form
        for name in management.fields:
            data[f"{management.prefix}-{name}"] = management[name].value()
        forms += [(f"{form.prefix}-", form) for form in formset.forms]
    for prefix, form in forms:
        for name, field in form.fields.items():
            value = form[name].value()
            if value is None:
                continue
            if isinstance(field, django_forms.JSONField) and not isinstance(value, str):
                value = json.dumps(value)
            elif isinstance(value, (list, tuple)):
                value = [getattr(v, "pk", v) for v in value]
            elif hasattr(value, "pk"):
                value = value.pk
            data[f"{prefix}{name}"] = value
    return data


@pytest.fixture
def code_question():
    from quizbank.tests.factories import ExerciseFactory, HintFactory

    question = QuestionFactory(kind="code", title="Double it")
    HintFactory(question=question, order=1, text="Multiply.")
    HintFactory(question=question, order=2, text="By two.")
    ExerciseFactory(question=question)
    return question


def test_an_exercise_the_grader_would_refuse_is_rejected_on_the_field(admin_client, code_question):
    data = change_form_data(admin_client, code_question)
    data["exercise-0-checks"] = '[{"name": "nonsense"}]'
    data["exercise-0-time_limit"] = "90"
    response = admin_client.post(f"/admin/quizbank/question/{code_question.pk}/change/", data)
    assert response.status_code == 200  # the form again, with its errors
    errors = response.context["inline_admin_formsets"][2].formset.forms[0].errors
    assert "time_limit" in errors and "at most 60 seconds" in str(errors["time_limit"])
    assert "checks" in errors and "compare" in str(errors["checks"])
    code_question.exercise.refresh_from_db()
    assert code_question.exercise.time_limit == 10


def test_saving_unchanged_text_with_crlf_line_endings_changes_nothing(admin_client, code_question):
    code_question.prompt = "Line one.\nLine two.\n"
    code_question.save()
    data = change_form_data(admin_client, code_question)
    for key, value in data.items():
        if isinstance(value, str):
            data[key] = value.replace("\n", "\r\n")  # what a browser sends from a text area
    response = admin_client.post(f"/admin/quizbank/question/{code_question.pk}/change/", data)
    assert response.status_code == 302, response.context and response.context["errors"]
    code_question.refresh_from_db()
    assert code_question.prompt == "Line one.\nLine two.\n"
    assert "\r" not in code_question.exercise.starter_code
    assert code_question.hints.get(order=1).text == "Multiply."


def test_edits_to_hints_and_the_exercise_show_in_the_question_history(admin_client, code_question):
    hint = code_question.hints.get(order=2)
    hint.text = "Times two."
    hint.save()
    exercise = code_question.exercise
    exercise.time_limit = 5
    exercise.save()
    response = admin_client.get(f"/admin/quizbank/question/{code_question.pk}/history/")
    rows = response.context["part_history"]
    assert [(r["part"], r["change"]) for r in rows[:2]] == [
        ("Exercise", "Changed"),
        ("Hint 2", "Changed"),
    ]
    assert b"Hints, quick checks and exercise" in response.content


def test_the_preview_shows_hints_quick_checks_and_the_exercise_editor(admin_client, code_question):
    from quizbank.tests.factories import QuickCheckFactory

    QuickCheckFactory(question=code_question, prompt="Which factor?")
    url = f"/admin/quizbank/question/{code_question.pk}/preview/"
    content = admin_client.get(url, follow=True).content.decode()
    assert "Preview: this is the page learners see." in content
    assert 'id="hints"' in content
    assert "Which factor?" in content
    assert 'id="exercise"' in content and "data-draft-key" in content


def yaml_form_data(admin_client, question) -> dict:
    """What the change page posts back untouched (its JSON fields as the YAML it shows), with a
    browser's CRLF line endings."""
    data = change_form_data(admin_client, question)
    return {k: v.replace("\n", "\r\n") if isinstance(v, str) else v for k, v in data.items()}


def test_json_fields_are_shown_as_the_bank_files_write_them(admin_client, code_question):
    from quizbank.tests.factories import QuickCheckFactory

    code_question.concepts = ["strides", "views"]
    code_question.save()
    QuickCheckFactory(question=code_question, choices=["`x * 2`", "`x + 2`"], answer=0)
    exercise = code_question.exercise
    exercise.wrong_solutions = {"adds": "def double(x):\n    return x + 2\n"}
    exercise.save()
    page = admin_client.get(f"/admin/quizbank/question/{code_question.pk}/change/")
    content = page.content.decode()
    assert "- strides\n- views\n</textarea>" in content
    assert "- &#x27;`x * 2`&#x27;\n- &#x27;`x + 2`&#x27;\n</textarea>" in content
    assert "adds: |\n  def double(x):\n      return x + 2\n" in content
    checks = re.search(r'id="id_exercise-0-checks">\n?(.*?)</textarea>', content, re.S)
    assert checks and checks.group(1).startswith("- ") and "name: " in checks.group(1)


WRONG = (
    '"""Misconception: adding.\n\nCorrection: doubling multiplies.\n\nHint: multiply.\n"""\n\n\n'
    "def double(x):\n    return x + 2\n"
)


def test_saving_the_yaml_back_untouched_changes_nothing(admin_client, code_question):
    code_question.concepts = ["strides", "views"]
    code_question.save()
    exercise = code_question.exercise
    exercise.wrong_solutions = {"adds": WRONG}
    exercise.save()
    checks_before = exercise.checks
    data = yaml_form_data(admin_client, code_question)
    response = admin_client.post(f"/admin/quizbank/question/{code_question.pk}/change/", data)
    assert response.status_code == 302, response.context and response.context["errors"]
    code_question.refresh_from_db()
    exercise.refresh_from_db()
    assert code_question.concepts == ["strides", "views"]
    assert exercise.wrong_solutions == {"adds": WRONG}
    assert exercise.checks == checks_before and exercise.forbid == []


def test_edited_yaml_is_saved_and_bad_yaml_is_refused_with_its_line(admin_client, code_question):
    url = f"/admin/quizbank/question/{code_question.pk}/change/"
    data = yaml_form_data(admin_client, code_question)
    data["concepts"] = "- strides\n- contiguity\n"
    assert admin_client.post(url, data).status_code == 302
    code_question.refresh_from_db()
    assert code_question.concepts == ["strides", "contiguity"]

    data["concepts"] = "- strides\n  - : [\n"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert "line 2: invalid YAML" in str(response.context["adminform"].form.errors["concepts"])
    data["concepts"] = "strides: yes\n"
    response = admin_client.post(url, data)
    assert "must be a list of texts" in str(response.context["adminform"].form.errors["concepts"])
    code_question.refresh_from_db()
    assert code_question.concepts == ["strides", "contiguity"]


def test_the_changelist_shows_the_last_changed_question_first(admin_client):
    older = QuestionFactory(slug="a-first", title="Changed long ago")
    newer = QuestionFactory(slug="z-last", title="Changed just now")
    Question.objects.filter(pk=older.pk).update(updated_at=newer.updated_at.replace(year=2020))
    content = admin_client.get("/admin/quizbank/question/").content.decode()
    assert content.index("Changed just now") < content.index("Changed long ago")
