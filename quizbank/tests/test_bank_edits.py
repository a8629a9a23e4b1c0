"""Files and admin agree: load_bank never silently overwrites an admin edit made since the last
import (it keeps the row and says so; --force takes the files); export_bank writes the edit back
to the files, after which a load is quiet again; loaded exercises are verified versions."""

import pytest
from django.core.management import call_command

from quizbank.models import Question

from .test_admin import change_form_data
from .test_bank_files import add_exercise, concept, good_bank, load, write_bank  # noqa: F401

pytestmark = pytest.mark.django_db

KEPT = (
    "load_bank: view-vs-reshape: edited in the admin since the last import; kept "
    "(use --force to take the files)"
)


@pytest.fixture
def curator(client, django_user_model):
    user = django_user_model.objects.create_superuser("boss", password="a-long-test-password")
    client.force_login(user)
    return client


def admin_edit(curator, slug: str, **fields) -> None:
    question = Question.objects.get(slug=slug)
    data = change_form_data(curator, question)
    data.update(fields)
    response = curator.post(f"/admin/quizbank/question/{question.pk}/change/", data)
    assert response.status_code == 302, response.context and response.context["errors"]


def test_an_admin_edit_survives_loads_and_is_reported(curator, good_bank, capsys):  # noqa: F811
    load(good_bank)
    admin_edit(
        curator,
        "view-vs-reshape",
        title="Views, strides and reshape",
        **{"hints-0-text": "Look at the strides."},
    )
    capsys.readouterr()
    for _ in range(2):  # make run, twice
        load(good_bank)
        out = capsys.readouterr().out
        assert KEPT in out
        assert "0 created, 0 updated, 1 unchanged, 1 kept" in out
        question = Question.objects.get(slug="view-vs-reshape")
        assert question.title == "Views, strides and reshape"
        assert question.hints.first().text == "Look at the strides."


def test_force_takes_the_files(curator, good_bank, capsys):  # noqa: F811
    load(good_bank)
    admin_edit(curator, "view-vs-reshape", title="Views, strides and reshape")
    call_command("load_bank", str(good_bank), "--force")
    assert "1 updated" in capsys.readouterr().out
    assert Question.objects.get(slug="view-vs-reshape").title == "What does view need?"
    load(good_bank)
    assert "0 updated, 2 unchanged" in capsys.readouterr().out


def test_an_edit_exported_to_the_files_round_trips(curator, good_bank, capsys):  # noqa: F811
    load(good_bank)
    admin_edit(curator, "view-vs-reshape", title="Views, strides and reshape")
    call_command("export_bank", str(good_bank))
    question_file = (good_bank / "view-vs-reshape" / "question.yaml").read_text()
    assert "Views, strides and reshape" in question_file
    capsys.readouterr()
    load(good_bank)
    out = capsys.readouterr().out
    assert "kept" not in out and "0 updated, 2 unchanged" in out
    # the files are now what was imported: a later change to them is taken as usual
    path = good_bank / "view-vs-reshape" / "question.yaml"
    path.write_text(path.read_text().replace("Views, strides and reshape", "Views at last"))
    load(good_bank)
    assert "1 updated" in capsys.readouterr().out
    assert Question.objects.get(slug="view-vs-reshape").title == "Views at last"


def test_a_file_change_to_an_unedited_question_is_taken(good_bank, capsys):  # noqa: F811
    load(good_bank)
    path = good_bank / "view-vs-reshape" / "question.yaml"
    path.write_text(path.read_text().replace("What does view need?", "When does view fail?"))
    load(good_bank)
    assert "1 updated" in capsys.readouterr().out
    assert Question.objects.get(slug="view-vs-reshape").title == "When does view fail?"


def test_loaded_exercises_are_verified_versions(good_bank):  # noqa: F811
    load(good_bank)
    exercise = Question.objects.get(slug="doubling").exercise
    assert [(v.number, v.state) for v in exercise.versions.all()] == [(1, "verified")]
    (good_bank / "doubling" / "solution.py").write_text("def double(x):\n    return x + x\n")
    load(good_bank)
    assert [(v.number, v.state) for v in exercise.versions.all()] == [
        (2, "verified"),
        (1, "verified"),
    ]
    assert exercise.live_version.solution_code == "def double(x):\n    return x + x\n"
    load(good_bank)
    assert exercise.versions.count() == 2  # an unchanged load makes no version


def test_a_whole_number_limit_in_the_files_is_not_an_edit(good_bank, capsys):  # noqa: F811
    (good_bank / "doubling" / "exercise.yaml").write_text(
        (good_bank / "doubling" / "exercise.yaml").read_text() + "time_limit: 20\n"
    )
    load(good_bank)
    assert Question.objects.get(slug="doubling").exercise.time_limit == 20.0
    capsys.readouterr()
    load(good_bank)
    out = capsys.readouterr().out
    assert "kept" not in out and "0 updated, 2 unchanged" in out


def test_a_load_with_no_file_changed_still_reports_and_a_taxonomy_change_is_taken(
    curator,
    good_bank,  # noqa: F811
    capsys,
):
    from quizbank.models import Topic

    load(good_bank)
    admin_edit(curator, "view-vs-reshape", title="Views, strides and reshape")
    capsys.readouterr()
    load(good_bank)  # nothing changed on disk: the quick path
    assert KEPT in capsys.readouterr().out
    path = good_bank / "taxonomy.yaml"
    path.write_text(path.read_text().replace("name: Tensors", "name: Tensors and views"))
    load(good_bank)
    assert Topic.objects.get(slug="tensors").name == "Tensors and views"
    assert KEPT in capsys.readouterr().out
