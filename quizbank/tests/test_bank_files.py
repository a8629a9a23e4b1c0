"""load_bank and export_bank through the management commands, on banks written to a temp folder."""

import shutil
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from quizbank.models import Exercise, Question, Topic
from quizbank.tests.factories import ADDS_TWO

pytestmark = pytest.mark.django_db

TAXONOMY = {
    "topics": [
        {"slug": "tensors", "name": "Tensors", "description": "Tensors."},
        {"slug": "autograd", "name": "Autograd", "description": "Gradients."},
    ],
    "applications": [{"slug": "computer-vision", "name": "Computer vision"}],
}


def concept(**overrides):
    question = {
        "title": "What does view need?",
        "difficulty": "medium",
        "kind": "concept",
        "status": "published",
        "topics": ["tensors"],
        "applications": ["computer-vision"],
        "concepts": ["torch.Tensor.view", "contiguity"],
        "prompt": "When does view fail?\n",
        "why_asked": "It tests memory layout.\n",
        "hints": ["Think of strides.", "Transpose first."],
        "asked_as": ["why does view complain about my transposed tensor", "view vs reshape"],
        "quick_checks": [
            {
                "kind": "single",
                "question": "Which works?",
                "choices": ["view", "reshape"],
                "answer": 1,
                "explanation": "reshape copies when it must.",
            },
        ],
    }
    question.update(overrides)
    return question


def write_bank(root: Path, questions: dict, taxonomy=TAXONOMY) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if taxonomy is not None:
        (root / "taxonomy.yaml").write_text(yaml.safe_dump(taxonomy))
    for slug, question in questions.items():
        folder = root / slug
        folder.mkdir()
        (folder / "question.yaml").write_text(yaml.safe_dump(question, sort_keys=False))
        (folder / "answer.md").write_text(f"The answer to {slug}.\n\n```python\nx = 1\n```\n")
    return root


def add_exercise(folder: Path, **overrides):
    meta = {
        "queue": "cpu",
        "checks": [
            {
                "name": "example",
                "visible": True,
                "code": "out = double(torch.ones(2))",
                "compare": "out",
            },
            {"name": "hidden", "code": "out = double(torch.arange(3.0))", "compare": ["out"]},
        ],
    }
    meta.update(overrides)
    (folder / "exercise.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    (folder / "starter.py").write_text("def double(x):\n    raise NotImplementedError\n")
    (folder / "solution.py").write_text("def double(x):\n    return 2 * x\n")
    (folder / "wrong").mkdir()
    (folder / "wrong" / "adds.py").write_text(ADDS_TWO)


def load(*paths, expect_exit=None, capsys=None):
    if expect_exit is None:
        call_command("load_bank", *[str(p) for p in paths])
        return None
    with pytest.raises(SystemExit) as exc:
        call_command("load_bank", *[str(p) for p in paths])
    assert exc.value.code == expect_exit
    return capsys.readouterr().err


def snapshot():
    """Everything load_bank writes, to prove a rejected load changed nothing."""
    from quizbank.bank.sync import _questions_for_sync, record_from_question

    return (
        [record_from_question(q) for q in _questions_for_sync().order_by("slug")],
        list(Topic.objects.values_list("slug", "name", "order")),
        Question.history.count(),
    )


@pytest.fixture
def good_bank(tmp_path):
    root = write_bank(
        tmp_path / "bank",
        {
            "view-vs-reshape": concept(),
            "doubling": concept(
                title="Double a tensor",
                kind="code",
                topics=["autograd", "tensors"],
                quick_checks=[],
                difficulty="easy",
                asked_as=["multiply every value by two"],
            ),
        },
    )
    add_exercise(root / "doubling")
    return root


def test_it_loads_questions_hints_quick_checks_and_exercises(good_bank):
    load(good_bank)
    question = Question.objects.get(slug="view-vs-reshape")
    assert question.status == "published" and question.published_at is not None
    assert question.primary_topic.slug == "tensors"
    assert [h.text for h in question.hints.all()] == ["Think of strides.", "Transpose first."]
    assert question.asked_as == [
        "why does view complain about my transposed tensor",
        "view vs reshape",
    ]
    assert question.quick_checks.get().answer == 1
    exercise = Exercise.objects.get(question__slug="doubling")
    assert exercise.solution_code == "def double(x):\n    return 2 * x\n"
    assert exercise.wrong_solutions == {"adds": ADDS_TWO}
    assert [c["name"] for c in exercise.checks] == ["example", "hidden"]
    assert Question.objects.get(slug="doubling").primary_topic.slug == "autograd"
    assert list(Topic.objects.values_list("slug", "order")) == [("tensors", 0), ("autograd", 1)]


def test_loading_twice_changes_nothing_the_second_time(good_bank, capsys):
    load(good_bank)
    before = snapshot()
    capsys.readouterr()
    load(good_bank)
    assert "0 created, 0 updated, 2 unchanged" in capsys.readouterr().out
    assert snapshot() == before


def test_an_edited_file_updates_its_question_in_place(good_bank, capsys):
    load(good_bank)
    path = good_bank / "view-vs-reshape" / "question.yaml"
    path.write_text(path.read_text().replace("What does view need?", "When does view fail?"))
    load(good_bank)
    assert "0 created, 1 updated, 1 unchanged" in capsys.readouterr().out
    assert Question.objects.get(slug="view-vs-reshape").title == "When does view fail?"
    assert Question.objects.count() == 2


def break_unknown_topic(root):
    edit_question(root, topics=["astrology"])


def break_bad_difficulty(root):
    edit_question(root, difficulty="trivial")


def break_missing_field(root):
    data = yaml.safe_load((root / "view-vs-reshape" / "question.yaml").read_text())
    del data["why_asked"]
    (root / "view-vs-reshape" / "question.yaml").write_text(yaml.safe_dump(data))


def break_bad_yaml(root):
    (root / "view-vs-reshape" / "question.yaml").write_text("title: [unclosed\nkind: concept\n")


def break_unknown_key(root):
    edit_question(root, answr="typo")


def break_bad_quick_check(root):
    edit_question(
        root,
        quick_checks=[
            {
                "kind": "single",
                "question": "?",
                "choices": ["a", "b"],
                "answer": 5,
                "explanation": ".",
            }
        ],
    )


def break_asked_as_repeat(root):
    edit_question(root, asked_as=["view vs reshape", "View  vs reshape"])


def break_asked_as_not_text(root):
    edit_question(root, asked_as=["view vs reshape", {"view": "reshape"}])


def break_exercise_check(root):
    meta = yaml.safe_load((root / "doubling" / "exercise.yaml").read_text())
    meta["checks"][1]["code"] = "out = double(\n"
    (root / "doubling" / "exercise.yaml").write_text(yaml.safe_dump(meta))


def break_missing_solution(root):
    (root / "doubling" / "solution.py").unlink()


def edit_question(root, **changes):
    path = root / "view-vs-reshape" / "question.yaml"
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (break_unknown_topic, "view-vs-reshape/question.yaml: topics: unknown topic 'astrology'"),
        (
            break_bad_difficulty,
            "view-vs-reshape/question.yaml: difficulty: 'trivial' is not one of",
        ),
        (break_missing_field, "view-vs-reshape/question.yaml: why_asked: is required"),
        (break_bad_yaml, "view-vs-reshape/question.yaml: line 2: invalid YAML"),
        (break_unknown_key, "view-vs-reshape/question.yaml: answr: unknown key"),
        (break_bad_quick_check, "question.yaml: quick_checks[0].answer: index 5 is out of range"),
        (break_asked_as_repeat, "question.yaml: asked_as[1]: repeats an earlier line"),
        (break_asked_as_not_text, "question.yaml: asked_as[1]: is a mapping, not text"),
        (break_exercise_check, "doubling/exercise.yaml: checks[1].code: is not valid Python"),
        (break_missing_solution, "doubling/solution.py: (file): is required for a code question"),
    ],
)
def test_one_bad_file_rejects_the_whole_load_and_changes_nothing(
    good_bank, capsys, breakage, expected
):
    load(good_bank)
    edit_question(good_bank, title="An edit that must not land")
    before = snapshot()
    breakage(good_bank)
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert expected in err
    assert "nothing was loaded" in err
    assert snapshot() == before
    assert Question.objects.get(slug="view-vs-reshape").title == "What does view need?"


def test_a_duplicate_slug_across_folders_is_rejected(good_bank, tmp_path, capsys):
    other = write_bank(tmp_path / "other", {"view-vs-reshape": concept()}, taxonomy=None)
    err = load(good_bank, other, expect_exit=1, capsys=capsys)
    assert "view-vs-reshape/question.yaml: slug: duplicate slug 'view-vs-reshape'" in err
    assert Question.objects.count() == 0


def test_an_asked_as_line_two_questions_share_is_rejected(good_bank, capsys):
    path = good_bank / "doubling" / "question.yaml"
    data = yaml.safe_load(path.read_text())
    data["asked_as"] = ["double every value", "View vs  reshape"]
    path.write_text(yaml.safe_dump(data))
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert (
        "doubling/question.yaml: asked_as[1]: view-vs-reshape has the same line" in err
        or "view-vs-reshape/question.yaml: asked_as[1]: doubling has the same line" in err
    )
    assert Question.objects.count() == 0


def test_a_duplicate_yaml_key_is_rejected(good_bank, capsys):
    path = good_bank / "view-vs-reshape" / "question.yaml"
    path.write_text(path.read_text() + "title: Again\n")
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert "duplicate key 'title'" in err


def test_a_missing_path_is_reported(tmp_path, capsys):
    err = load(tmp_path / "nowhere", expect_exit=1, capsys=capsys)
    assert f"{tmp_path / 'nowhere'}: (path): does not exist" in err


def test_load_export_load_round_trips(good_bank, tmp_path, capsys):
    load(good_bank)
    before = snapshot()
    call_command("export_bank", str(tmp_path / "exported"))
    Question.objects.all().delete()
    load(tmp_path / "exported")
    after = snapshot()
    assert after[0] == before[0] and after[1] == before[1]
    # and exporting again writes byte-identical files
    call_command("export_bank", str(tmp_path / "again"))
    for path in sorted((tmp_path / "exported").rglob("*")):
        twin = tmp_path / "again" / path.relative_to(tmp_path / "exported")
        assert twin.exists(), twin
        if path.is_file():
            assert path.read_bytes() == twin.read_bytes(), path


def test_export_replaces_a_question_folder_whole(good_bank, tmp_path):
    load(good_bank)
    target = tmp_path / "exported"
    call_command("export_bank", str(target))
    (target / "doubling" / "wrong" / "stale.py").write_text("x = 1\n")
    call_command("export_bank", str(target))
    assert not (target / "doubling" / "wrong" / "stale.py").exists()
    assert (target / "doubling" / "wrong" / "adds.py").exists()
    assert not list(target.glob(".export-*"))


def test_the_shipped_bank_loads(capsys):
    root = Path(__file__).resolve().parents[2] / "fixtures" / "bank"
    load(root)
    assert Question.objects.published().count() >= 10
    assert "0 updated" in capsys.readouterr().out


def test_a_copy_of_the_shipped_bank_round_trips(tmp_path):
    root = Path(__file__).resolve().parents[2] / "fixtures" / "bank"
    load(root)
    before = snapshot()
    call_command("export_bank", str(tmp_path / "out"))
    shutil.rmtree(
        tmp_path / "out" / next(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    )
    load(tmp_path / "out")
    assert snapshot() == before


def test_an_exercise_with_a_limit_the_grader_refuses_is_rejected_at_load(good_bank, capsys):
    add_exercise_meta = yaml.safe_load((good_bank / "doubling" / "exercise.yaml").read_text())
    add_exercise_meta["time_limit"] = 90
    (good_bank / "doubling" / "exercise.yaml").write_text(yaml.safe_dump(add_exercise_meta))
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert "doubling/exercise.yaml: time_limit: must be more than 0 and at most 60 seconds" in err
    assert Question.objects.count() == 0


def test_checks_the_grader_refuses_are_rejected_at_load(good_bank, capsys):
    meta = yaml.safe_load((good_bank / "doubling" / "exercise.yaml").read_text())
    meta["checks"] = meta["checks"] * 40  # more checks than the grader takes, names repeated
    (good_bank / "doubling" / "exercise.yaml").write_text(yaml.safe_dump(meta))
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert "doubling/exercise.yaml" in err
    assert Question.objects.count() == 0


def test_a_wrong_solution_must_name_its_misconception_a_correction_and_a_hint(good_bank, capsys):
    (good_bank / "doubling" / "wrong" / "bare.py").write_text("def double(x):\n    return x\n")
    (good_bank / "doubling" / "wrong" / "no_hint.py").write_text(
        '"""Misconception: Identity doubles."""\n\ndef double(x):\n    return x\n'
    )
    (good_bank / "doubling" / "wrong" / "no_correction.py").write_text(
        '"""Misconception: Identity doubles.\n\nHint: Try 3."""\n\ndef double(x):\n    return x\n'
    )
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert "doubling/wrong/bare.py: (file): must open with a docstring naming its" in err
    assert "doubling/wrong/no_hint.py: (file): must open with a docstring" in err
    assert (
        "doubling/wrong/no_correction.py: (file): must say what is true in a 'Correction:' "
        "paragraph"
    ) in err
    assert "wrong/adds.py" not in err


def test_wrong_solution_notes_are_read_from_the_docstring():
    from quizbank.bank.schema import wrong_solution_notes

    assert wrong_solution_notes(ADDS_TWO) == {
        "misconception": "Doubling means adding two.",
        "correction": "Doubling multiplies by two; adding two agrees only at x = 2.",
        "hint": "Try x = 3.",
    }
    assert wrong_solution_notes("x = 1\n") is None


def test_a_correction_line_is_not_read_as_part_of_the_hint():
    from quizbank.bank.schema import wrong_solution_notes

    code = (
        '"""Misconception: Doubling adds two.\n\nHint: Try 3.\n\n'
        'Correction: Doubling multiplies by two.\n"""\n'
    )
    assert wrong_solution_notes(code) == {
        "misconception": "Doubling adds two.",
        "hint": "Try 3.",
        "correction": "Doubling multiplies by two.",
    }


def test_check_code_that_compares_in_the_sandbox_is_rejected(good_bank, capsys):
    meta = yaml.safe_load((good_bank / "doubling" / "exercise.yaml").read_text())
    meta["checks"][1]["code"] = "out = double(torch.arange(3.0))\nsame = torch.equal(out, out)"
    meta["checks"][1]["compare"] = ["same"]
    (good_bank / "doubling" / "exercise.yaml").write_text(yaml.safe_dump(meta))
    err = load(good_bank, expect_exit=1, capsys=capsys)
    assert "doubling/exercise.yaml" in err and "equal" in err
    assert Question.objects.count() == 0
