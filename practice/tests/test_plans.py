from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from practice.models import PlanEnrollment, StudyPlan
from practice.services import learning, plans
from quizbank.tests.factories import QuestionFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PLAN = {
    "title": "Tensors first",
    "order": 1,
    "description": "Start here.",
    "sections": [
        {"title": "Day 1", "description": "Shapes.", "questions": ["q-one", "q-two"]},
        {"title": "Day 2", "questions": ["q-three"]},
    ],
}


@pytest.fixture
def questions(db):
    return [
        QuestionFactory(slug=s, title=s.replace("-", " ")) for s in ("q-one", "q-two", "q-three")
    ]


@pytest.fixture
def plan(questions, tmp_path):
    (tmp_path / "tensors-first.yaml").write_text(yaml.safe_dump(PLAN), encoding="utf-8")
    call_command("load_plans", str(tmp_path))
    return StudyPlan.objects.get(slug="tensors-first")


def test_every_shipped_plan_names_questions_of_the_bank():
    files = sorted((ROOT / "fixtures" / "plans").glob("*.yaml"))
    assert len(files) >= 5
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert data["title"] and data["description"] and data["sections"], path
        for section in data["sections"]:
            for slug in section["questions"]:
                assert (ROOT / "fixtures" / "bank" / slug / "question.yaml").exists(), (path, slug)


def test_the_shipped_plans_load_after_the_shipped_bank(capsys):
    call_command("load_bank")
    call_command("load_plans")
    assert StudyPlan.objects.count() >= 5
    assert "0 updated" in capsys.readouterr().out
    call_command("load_plans")
    assert "0 created, 0 updated" in capsys.readouterr().out


def test_load_export_load_round_trips(plan, tmp_path, capsys):
    out = tmp_path / "out"
    call_command("export_plans", str(out))
    assert yaml.safe_load((out / "tensors-first.yaml").read_text()) == PLAN
    call_command("load_plans", str(out))
    assert "0 created, 0 updated, 1 unchanged" in capsys.readouterr().out


def test_an_edited_plan_is_replaced_in_place(plan, tmp_path):
    edited = {**PLAN, "sections": [{"title": "All", "questions": ["q-three", "q-one"]}]}
    (tmp_path / "tensors-first.yaml").write_text(yaml.safe_dump(edited), encoding="utf-8")
    call_command("load_plans", str(tmp_path))
    assert plans.plan_record(StudyPlan.objects.get(pk=plan.pk))["sections"] == [
        {"title": "All", "questions": ["q-three", "q-one"]}
    ]


def test_a_bad_plan_rejects_the_whole_load(questions, tmp_path, capsys):
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(PLAN), encoding="utf-8")
    bad = {**PLAN, "colour": "red", "sections": [{"title": "x", "questions": ["nope", "q-one"]}]}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    with pytest.raises(SystemExit):
        call_command("load_plans", str(tmp_path))
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad.yaml'}: colour: unknown field" in err
    assert "sections[1].questions: no question with the slug 'nope'" in err
    assert not StudyPlan.objects.exists()


def test_the_plan_pages_show_progress_and_starting_puts_it_on_the_home_page(
    client, user, plan, questions
):
    one, two, three = questions
    assert "Sign up" in client.get("/plans/").content.decode()
    assert "/accounts/login/" in client.post("/plans/tensors-first/start/")["Location"]
    client.force_login(user)
    learning.review_rate(user=user, question=one, rating=3)
    body = client.get("/plans/").content.decode()
    assert "1 of 3 questions solved" in body
    body = client.get("/plans/tensors-first/").content.decode()
    assert "1 of 3 solved (33%)" in body and "Start this plan" in body
    assert client.post("/plans/tensors-first/start/").status_code == 302
    home = client.get("/").content.decode()
    assert (
        "Tensors first" in home
        and f'href="/questions/{two.slug}/?plan=tensors-first" id="continue-plan"' in home
    )
    assert "Continue: q two" in client.get("/plans/tensors-first/").content.decode()


def test_next_question_follows_the_plan_the_learner_came_from(client, user, questions, tmp_path):
    # The plan's order is not the bank's: q-three, then q-one.
    plan = {
        **PLAN,
        "title": "Backwards",
        "sections": [{"title": "All", "questions": ["q-three", "q-one"]}],
    }
    (tmp_path / "backwards.yaml").write_text(yaml.safe_dump(plan), encoding="utf-8")
    call_command("load_plans", str(tmp_path))
    client.force_login(user)
    listing = client.get("/plans/backwards/").content.decode()
    assert 'href="/questions/q-three/?plan=backwards"' in listing
    body = client.get("/questions/q-three/?plan=backwards").content.decode()
    assert 'aria-label="In this plan"' in body
    assert 'href="/questions/q-one/?plan=backwards" rel="next"' in body
    rated = client.post(
        "/questions/q-three/rate/",
        {"rating": "good"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/questions/q-three/?plan=backwards",
    ).content.decode()
    assert 'id="next-in-list" href="/questions/q-one/?plan=backwards"' in rated
    # The last question of the plan has no next, whatever follows it in the bank.
    assert 'rel="next"' not in client.get("/questions/q-one/?plan=backwards").content.decode()


def test_the_api_gives_plans_with_progress_only_to_their_owner(
    api, user, plan, questions, django_user_model
):
    learning.review_rate(user=user, question=questions[1], rating=3)
    body = api.get("/api/plans/").json()
    assert body == [
        {
            "slug": "tensors-first",
            "title": "Tensors first",
            "description": "Start here.",
            "total": 3,
            "solved": None,
            "started": None,
        }
    ]
    anonymous = api.get("/api/plans/tensors-first/").json()
    assert anonymous["solved"] == 0 and anonymous["next_question"] == "q-one"
    other = django_user_model.objects.create_user("other")
    api.force_authenticate(other)
    assert api.get("/api/plans/").json()[0]["solved"] == 0
    api.force_authenticate(user)
    plans.plan_start(user=user, plan=plan)
    assert (
        api.get("/api/plans/").json()[0] | {"solved": 1, "started": True}
        == api.get("/api/plans/").json()[0]
    )
    detail = api.get("/api/plans/tensors-first/").json()
    states = [q["state"] for s in detail["sections"] for q in s["questions"]]
    assert states == [None, "solved", None] and detail["started"] is True
    assert api.get("/api/plans/nope/").status_code == 404
    assert PlanEnrollment.objects.count() == 1


def test_an_unpublished_question_leaves_the_plan(client, plan, questions):
    questions[0].archive()
    body = client.get("/plans/tensors-first/").content.decode()
    assert "q one" not in body and "q two" in body


def test_the_plan_list_runs_a_fixed_number_of_queries(
    client, user, plan, django_assert_num_queries
):
    client.force_login(user)
    with django_assert_num_queries(3):
        assert client.get("/plans/").status_code == 200


def test_staff_edit_plans_in_the_admin(client, staff, plan):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    body = client.get(f"/admin/practice/studyplan/{plan.pk}/change/").content.decode()
    assert "Day 1" in body and "q-one, q-two" in body
    section = plan.sections.get(order=1)
    body = client.get(f"/admin/practice/plansection/{section.pk}/change/").content.decode()
    assert "q one" in body
