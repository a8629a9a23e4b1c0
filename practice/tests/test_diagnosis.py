"""Feedback that teaches: a failing submission is matched, in the grader, against the exercise's
known wrong solutions; the API and the page name the misconception it shares. Runs the real
sandbox (the exercise fixture's wrong solution adds two instead of doubling)."""

import pytest

from practice.models import Submission

pytestmark = pytest.mark.django_db


def submit(api, code, capture, mode=None):
    body = {"question": "double-it", "code": code}
    if mode:
        body["mode"] = mode
    with capture(execute=True):
        response = api.post("/api/submissions/", body, format="json")
    assert response.status_code == 201, response.content
    return api.get(f"/api/submissions/{response.json()['id']}/").json()


def test_a_known_mistake_is_named_as_a_belief_with_its_hint(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    body = submit(api, "def double(x):\n    return x + 2\n", django_capture_on_commit_callbacks)
    assert body["status"] == "failed"
    assert body["diagnosis"] == {
        "misconception": "Doubling means adding two.",
        "belief": "You may be assuming that doubling means adding two.",
        "correction": "Doubling multiplies by two; adding two agrees only at x = 2.",
        "hint": "Try x = 3.",
        "confidence": "outputs",
    }


def test_a_version_whose_wrong_solution_has_no_correction_gets_none_invented(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    # The bank requires a Correction now, but a version saved before it may lack one.
    exercise.wrong_solutions = {
        "adds": '"""Misconception: Doubling means adding two.\n\nHint: Try x = 3.\n"""\n'
        "def double(x):\n    return x + 2\n"
    }
    exercise.save()
    exercise.version_create(verified=True)
    api.force_authenticate(user)
    body = submit(api, "def double(x):\n    return x + 2\n", django_capture_on_commit_callbacks)
    assert body["diagnosis"]["belief"] == "You may be assuming that doubling means adding two."
    assert "correction" not in body["diagnosis"]
    api.force_login(user)  # the page is a Django view: a session, not DRF's forced auth
    html = api.get(f"/submissions/{body['id']}/", headers={"HX-Request": "true"}).content.decode()
    assert "You may be assuming that doubling means adding two." in html
    assert 'class="correction"' not in html


def test_the_correction_follows_the_belief_where_the_bank_has_one(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    exercise.wrong_solutions = {
        "adds": '"""Misconception: Doubling means adding two.\n\nHint: Try x = 3.\n\n'
        'Correction: Doubling multiplies by two; adding two only agrees at x = 2.\n"""\n'
        "def double(x):\n    return x + 2\n"
    }
    exercise.save()
    exercise.version_create(verified=True)  # learners are graded against the verified version
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/questions/double-it/submissions/",
            {"code": "def double(x):\n    return x + 2\n", "mode": "submit"},
            headers={"HX-Request": "true"},
        )
    html = client.get(
        f"/submissions/{Submission.objects.get().pk}/", headers={"HX-Request": "true"}
    ).content.decode()
    belief = html.index("You may be assuming that doubling means adding two.")
    correction = html.index("Doubling multiplies by two; adding two only agrees at x = 2.")
    assert belief < correction < html.index("Try x = 3.")


def test_the_same_failing_checks_with_other_values_get_no_misconception(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    # x * 3 fails exactly the checks x + 2 fails, with other values: that is a guess, and a
    # wrong guess sends the learner hunting for a bug they do not have.
    api.force_authenticate(user)
    body = submit(api, "def double(x):\n    return x * 3\n", django_capture_on_commit_callbacks)
    assert body["status"] == "failed"
    assert body["diagnosis"] is None


def test_an_old_pattern_guess_is_no_longer_shown(api, user, exercise):
    from practice.tests.factories import SubmissionFactory

    old = SubmissionFactory(
        user=user,
        question=exercise.question,
        status="failed",
        diagnosis={"misconception": "M.", "hint": "H.", "confidence": "pattern"},
    )
    api.force_authenticate(user)
    assert api.get(f"/api/submissions/{old.pk}/").json()["diagnosis"] is None


def test_a_passing_submission_and_an_unknown_mistake_have_no_diagnosis(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    right = submit(api, "def double(x):\n    return x * 2\n", django_capture_on_commit_callbacks)
    assert right["status"] == "passed" and right["diagnosis"] is None
    odd = submit(api, "def double(x):\n    return x.sum()\n", django_capture_on_commit_callbacks)
    assert odd["status"] == "failed" and odd["diagnosis"] is None


def test_the_page_shows_the_diagnosis_above_the_checks(
    client, user, exercise, eager, django_capture_on_commit_callbacks
):
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/questions/double-it/submissions/",
            {"code": "def double(x):\n    return x + 2\n", "mode": "submit"},
            headers={"HX-Request": "true"},
        )
    submission = Submission.objects.get()
    page = client.get(f"/submissions/{submission.pk}/", headers={"HX-Request": "true"})
    html = page.content.decode()
    assert "You may be assuming that doubling means adding two." in html
    assert html.index("You may be assuming") < html.index('class="checks"')


def test_examples_mode_runs_only_visible_checks_and_is_never_scored(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    wrong = "def double(x):\n    return x + 2\n"
    body = submit(api, wrong, django_capture_on_commit_callbacks, mode="examples")
    assert body["mode"] == "examples" and body["status"] == "failed"
    assert [c["name"] for c in body["checks"]] == ["doubles an example"]
    assert all(c["visible"] for c in body["checks"])
    right = submit(
        api, "def double(x):\n    return x * 2\n", django_capture_on_commit_callbacks, "examples"
    )
    assert right["status"] == "passed"
    # Example runs are listed apart, and neither schedule a review nor solve the question.
    assert api.get("/api/submissions/").json()["results"] == []
    listed = api.get("/api/submissions/?mode=examples").json()["results"]
    assert {s["id"] for s in listed} == {body["id"], right["id"]}
    assert not user.review_cards.exists()
    assert not user.question_progress.filter(state="solved").exists()
    assert api.get("/api/submissions/?mode=nope").status_code == 400


VARIANCE = (
    "import torch\ndef variance(x):\n"
    "    return ((x - x.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1)\n"
)
VARIANCE_IN_FLOAT32 = (
    "import torch\ndef variance(x):\n    y = x.float()\n"
    "    return ((y - y.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1).double()\n"
)


def test_a_failing_generated_check_shows_the_smallest_input_where_the_code_differs(
    api, client, user, eager, django_capture_on_commit_callbacks
):
    from quizbank.tests.factories import ExerciseFactory, QuestionFactory

    checks = [
        {
            "name": "every family, float64",
            "code": "cases = gen.floats((3, 4), dtype=torch.float64)\n"
            "outs = gen.each(cases, lambda x: variance(x).float())",
            "compare": "outs",
        },
        {
            "name": "a fixed input",
            "code": "out = variance(torch.arange(8.0, dtype=torch.float64).view(2, 4))",
            "compare": "out",
        },
    ]
    ExerciseFactory(
        question=QuestionFactory(slug="variance", kind="code"),
        solution_code=VARIANCE,
        checks=checks,
        wrong_solutions={},
    )
    api.force_authenticate(user)
    with django_capture_on_commit_callbacks(execute=True):
        body = {"question": "variance", "code": VARIANCE_IN_FLOAT32}
        response = api.post("/api/submissions/", body, format="json")
    body = api.get(f"/api/submissions/{response.json()['id']}/").json()
    assert body["status"] == "failed" and body["diagnosis"] is None
    assert (
        "Matches on ordinary inputs; differs when the values are large (around 1e4)"
        in (body["message"])
    )
    example = body["checks"][0]["counterexample"]
    assert (example["family"], example["size"], example["property"]) == ("offset", 12, "value")
    assert example["input"].splitlines()[1].startswith("        [")  # indentation kept
    client.force_login(user)
    html = client.get(f"/submissions/{body['id']}/", headers={"HX-Request": "true"}).content
    assert b"Smallest generated input where your code differs" in html
    assert b"dtype=torch.float64)" in html
    # Differing on every family, the smallest case is not presented as where the bug lies.
    with django_capture_on_commit_callbacks(execute=True):
        body = {"question": "variance", "code": "def variance(x):\n    raise ValueError('no')\n"}
        response = api.post("/api/submissions/", body, format="json")
    html = client.get(
        f"/submissions/{response.json()['id']}/", headers={"HX-Request": "true"}
    ).content
    assert b"Your code differs on every kind of generated input; the smallest ordinary case" in html
    assert b"Smallest generated input where your code differs" not in html
    assert b"the input is empty" not in html
    # Differing on ordinary inputs but not on an empty one: the smallest failing case's kind is
    # not offered as where the mistake lies.
    off_by_one = VARIANCE.replace("(dim=-1)\n", "(dim=-1) + (x.numel() > 0)\n")
    assert off_by_one != VARIANCE
    with django_capture_on_commit_callbacks(execute=True):
        body = {"question": "variance", "code": off_by_one}
        response = api.post("/api/submissions/", body, format="json")
    found = api.get(f"/api/submissions/{response.json()['id']}/").json()
    example = found["checks"][0]["counterexample"]
    assert example["ordinary_fails"] is True and example["every_family"] is False
    html = client.get(
        f"/submissions/{response.json()['id']}/", headers={"HX-Request": "true"}
    ).content
    assert b"Your code differs already on ordinary inputs; the smallest ordinary case" in html
    assert example["family"] == "ordinary"
    assert b"Smallest generated input where your code differs" not in html
    assert example.get("also_drawn") is None and b"draws itself" not in html


def test_a_case_that_used_values_drawn_by_the_check_says_the_input_is_not_all(
    api, client, user, eager, django_capture_on_commit_callbacks
):
    from quizbank.tests.factories import ExerciseFactory, QuestionFactory

    # A warm-up batch drawn inside the case: the input shown alone does not decide the output.
    reference = "def total(batches):\n    return sum(b.sum() for b in batches)\n"
    checks = [
        {
            "name": "after a warm-up batch",
            "code": "outs = gen.each(gen.floats((2, 3)), lambda x: total([gen.randn(2, 3), x]))",
            "compare": "outs",
        }
    ]
    ExerciseFactory(
        question=QuestionFactory(slug="total", kind="code"),
        solution_code=reference,
        checks=checks,
        wrong_solutions={},
    )
    api.force_authenticate(user)
    wrong = reference.replace("b.sum()", "b.abs().sum()")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/submissions/", {"question": "total", "code": wrong}, format="json"
        )
    body = api.get(f"/api/submissions/{response.json()['id']}/").json()
    assert body["checks"][0]["counterexample"]["also_drawn"] is True
    client.force_login(user)
    html = client.get(f"/submissions/{body['id']}/", headers={"HX-Request": "true"}).content
    assert b"random values that the check draws itself (not shown)" in html


def test_your_own_lines_run_after_your_code_and_show_what_they_print(
    api, client, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    code = "def double(x):\n    return x + 2\n"
    lines = "print(double(torch.tensor([3.0])))\nprint('never the reference')\n"
    body = {"question": "double-it", "code": code, "mode": "scratch", "scratch": lines}
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/submissions/", body, format="json")
    assert response.status_code == 201, response.content
    run = api.get(f"/api/submissions/{response.json()['id']}/").json()
    assert run["mode"] == "scratch" and run["status"] == "passed", run
    # The learner's own (wrong) function ran, not the reference: 3 + 2, not 3 * 2.
    assert run["output"] == "tensor([5.])\nnever the reference\n"
    assert run["checks"] == [] and run["diagnosis"] is None
    # Never scored, never listed with the submissions, never a review.
    assert api.get("/api/submissions/").json()["results"] == []
    assert not user.review_cards.exists()
    assert not user.question_progress.filter(state="solved").exists()


def test_your_own_lines_are_sandboxed_and_their_errors_named(
    api, user, exercise, eager, django_capture_on_commit_callbacks
):
    api.force_authenticate(user)
    cases = {
        "import socket\nsocket.socket()\n": "Your lines raised PermissionError",
        "double(undefined_name)\n": "Your lines raised NameError",
    }
    for lines, message in cases.items():
        body = {"question": "double-it", "code": "def double(x):\n    return x * 2\n"}
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(
                "/api/submissions/", {**body, "mode": "scratch", "scratch": lines}, format="json"
            )
        run = api.get(f"/api/submissions/{response.json()['id']}/").json()
        assert run["status"] == "failed", run
        assert run["message"].startswith(message), run["message"]


def test_your_own_lines_need_lines_and_the_scratch_mode(api, user, exercise):
    api.force_authenticate(user)
    code = "def double(x):\n    return x * 2\n"
    empty = api.post(
        "/api/submissions/",
        {"question": "double-it", "code": code, "mode": "scratch", "scratch": "  "},
        format="json",
    )
    assert empty.status_code == 400 and "scratch" in empty.json()
    stray = api.post(
        "/api/submissions/",
        {"question": "double-it", "code": code, "mode": "submit", "scratch": "print(1)"},
        format="json",
    )
    assert stray.status_code == 400 and "scratch" in stray.json()
