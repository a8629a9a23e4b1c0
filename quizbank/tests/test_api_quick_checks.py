import pytest

from .factories import QuestionFactory, QuickCheckFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("kind", "choices", "answer", "response", "correct"),
    [
        ("single", ["a", "b", "c"], 1, 1, True),
        ("single", ["a", "b", "c"], 1, 2, False),
        ("single", ["a", "b", "c"], 1, True, False),
        ("multiple", ["a", "b", "c"], [0, 2], [2, 0], True),
        ("multiple", ["a", "b", "c"], [0, 2], [0], False),
        ("predict", [], "torch.Size([2, 3])", "  torch.Size([2, 3])\n", True),
        ("predict", [], "torch.Size([2, 3])", "torch.Size([3, 2])", False),
    ],
)
def test_an_answer_is_graded_and_the_explanation_returned(
    api, kind, choices, answer, response, correct
):
    check = QuickCheckFactory(kind=kind, choices=choices, answer=answer, explanation="Because.")
    result = api.post(f"/api/quick-checks/{check.pk}/answer/", {"answer": response}, format="json")
    assert result.status_code == 200
    assert result.json() == {"correct": correct, "answer": answer, "explanation": "Because."}


def test_a_missing_answer_is_400_with_the_field(api):
    check = QuickCheckFactory()
    result = api.post(f"/api/quick-checks/{check.pk}/answer/", {}, format="json")
    assert result.status_code == 400
    assert "answer" in result.json()


def test_quick_checks_of_drafts_are_404(api):
    check = QuickCheckFactory(question=QuestionFactory(status="draft"))
    result = api.post(f"/api/quick-checks/{check.pk}/answer/", {"answer": 1}, format="json")
    assert result.status_code == 404


def test_quick_checks_are_listed_without_their_answers(api):
    from quizbank.tests.factories import QuestionFactory, QuickCheckFactory

    shown = QuickCheckFactory(question=QuestionFactory(slug="shown"))
    QuickCheckFactory(question=QuestionFactory(slug="draft", status="draft"))
    body = api.get("/api/quick-checks/").json()
    assert [c["id"] for c in body["results"]] == [shown.pk]
    assert "answer" not in body["results"][0] and "explanation" not in body["results"][0]
    assert api.get("/api/quick-checks/?question=draft").json()["results"] == []
