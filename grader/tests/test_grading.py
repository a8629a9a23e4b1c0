"""Grading behaviour: verdicts, check messages, tolerances, structural rules, snippets."""

from __future__ import annotations

import textwrap

import pytest

from grader.tests.helpers import exercise_job


def job_for(code: str, reference: str, checks: list[dict], **extra) -> dict:
    return {
        "code": textwrap.dedent(code),
        "reference": textwrap.dedent(reference),
        "checks": checks,
        **extra,
    }


def statuses(result: dict) -> dict[str, str]:
    return {check["name"]: check["status"] for check in result["checks"]}


def test_the_reference_solution_passes_and_the_gpu_check_is_skipped(pool):
    result = pool.grade(exercise_job("normalize-rows", "solution.py"))
    assert result["status"] == "passed"
    assert result["message"] == "All 5 checks passed; 1 needs CUDA and was skipped."
    assert result["skipped"] == 1
    assert statuses(result)["works on the GPU"] == "skipped"
    assert set(result) == {
        "status",
        "message",
        "checks",
        "output",
        "duration_ms",
        "skipped",
        "diagnosis",
        "reference_ms",
    }
    assert set(result["checks"][0]) == {"name", "status", "message", "visible"}


@pytest.mark.parametrize(
    ("code_file", "failing"),
    [
        ("wrong/in_place.py", ["does not modify its input"]),
        ("wrong/zero_rows_nan.py", ["leaves a zero row at zero"]),
        (
            "wrong/columns.py",
            [
                "matches the example in the prompt",
                "keeps the shape and dtype of a batch",
                "rows have unit length",
                "leaves a zero row at zero",
            ],
        ),
    ],
)
def test_a_wrong_solution_fails_naming_its_failing_checks(pool, code_file, failing):
    result = pool.grade(exercise_job("normalize-rows", code_file))
    assert result["status"] == "failed"
    assert [name for name, status in statuses(result).items() if status == "failed"] == failing
    assert result["message"] == f"{len(failing)} of 5 checks failed: {'; '.join(failing)}."


def test_the_starter_fails_every_check_with_not_implemented(pool):
    result = pool.grade(exercise_job("normalize-rows", "starter.py"))
    assert result["status"] == "failed"
    visible = result["checks"][0]
    assert visible["message"] == "Raised NotImplementedError (line 9 of your code)"


def test_a_visible_check_shows_expected_and_actual_but_a_hidden_one_neither(pool):
    reference = "def scale(x):\n    return x * 2\n"
    code = "def scale(x):\n    return x * 3\n"
    checks = [
        {
            "name": "visible",
            "visible": True,
            "code": "out = scale(torch.tensor([1.5]))",
            "compare": "out",
        },
        {"name": "hidden", "code": "out = scale(torch.tensor([12345.75]))", "compare": "out"},
    ]
    result = pool.grade(job_for(code, reference, checks))
    messages = {c["name"]: c["message"] for c in result["checks"]}
    assert messages["visible"] == (
        "1 of 1 values differ beyond the tolerance (rtol=1.3e-06, atol=1e-05), by up to 1.5: "
        "expected tensor([3.]), got tensor([4.5000])"
    )
    # Neither how many values differ nor by how much: with NaN masks that is an oracle.
    assert messages["hidden"] == "values differ beyond the tolerance (rtol=1.3e-06, atol=1e-05)"
    assert "12345" not in str(result) and "24691" not in str(result) and "37037" not in str(result)


def test_a_hidden_check_names_the_exception_but_not_its_message(pool):
    code = """
    def scale(x):
        raise ValueError(f"the input was {x.tolist()}")
    """
    checks = [
        {
            "name": "visible",
            "visible": True,
            "code": "out = scale(torch.tensor([1.0]))",
            "compare": "out",
        },
        {"name": "hidden", "code": "out = scale(torch.tensor([777.0]))", "compare": "out"},
    ]
    result = pool.grade(job_for(code, "def scale(x):\n    return x\n", checks))
    visible, hidden = result["checks"]
    assert visible["message"] == "Raised ValueError: the input was [1.0] (line 3 of your code)"
    assert hidden["message"] == "Raised ValueError (line 3 of your code)"


def test_a_hidden_shape_mismatch_does_not_show_the_shapes(pool):
    checks = [
        {"name": "hidden", "code": "out = f(torch.ones(11, 7))", "compare": "out"},
        {"name": "visible", "visible": True, "code": "out = f(torch.ones(2, 3))", "compare": "out"},
    ]
    result = pool.grade(job_for("def f(x):\n    return x.T\n", "def f(x):\n    return x\n", checks))
    hidden, visible = result["checks"]
    assert hidden["message"] == "the shape differs from the expected one"
    assert visible["message"] == "shape [3, 2] where [2, 3] was expected"


def test_tolerances_follow_the_dtype(pool):
    # Each check perturbs the reference's value by a relative error just inside, or just
    # outside, the default rtol of its dtype (atol is negligible at magnitude 1000).
    perturbations = {
        "float64": ("1e-10", 5e-11, 5e-10),
        "float32": ("1.3e-6", 3e-7, 5e-6),
        "bfloat16": ("1.6e-2", None, 6e-2),
        "float16": ("1e-3", 4e-4, 4e-3),
    }
    checks = []
    for dtype, (_, inside, outside) in perturbations.items():
        for label, eps in (("inside", inside), ("outside", outside)):
            if eps is None:
                continue
            checks.append(
                {
                    "name": f"{dtype} {label}",
                    "code": f"out = bump(torch.full((4,), 1000.0, dtype=torch.{dtype}), {eps})",
                    "compare": "out",
                }
            )
    reference = "def bump(x, eps):\n    return x\n"
    code = "def bump(x, eps):\n    return (x.double() * (1 + eps)).to(x.dtype)\n"
    result = pool.grade(job_for(code, reference, checks))
    for name, status in statuses(result).items():
        assert status == ("passed" if name.endswith("inside") else "failed"), name


def test_a_check_can_set_its_own_tolerances(pool):
    checks = [
        {"name": "default", "code": "out = f()", "compare": "out"},
        {"name": "loose", "code": "out = f()", "compare": "out", "rtol": 0.01, "atol": 0},
    ]
    code = "import torch\ndef f():\n    return torch.tensor([1.001])\n"
    reference = "import torch\ndef f():\n    return torch.tensor([1.0])\n"
    result = pool.grade(job_for(code, reference, checks))
    assert statuses(result) == {"default": "failed", "loose": "passed"}


@pytest.mark.parametrize(
    ("submitted", "expected", "message"),
    [
        ("torch.tensor([1, 2])", "torch.tensor([1, 2])", None),
        ("torch.tensor([1, 3])", "torch.tensor([1, 2])", "values differ"),
        (
            "torch.tensor([1.0, 2.0])",
            "torch.tensor([1, 2])",
            "dtype torch.float32 where torch.int64 was expected",
        ),
        ("1.0000001", "1.0", None),
        ("1.01", "1.0", "the value differs beyond the tolerance (rtol=1.3e-06, atol=1e-05)"),
        ("1", "1.0", "a int where a float was expected"),
        ("float('nan')", "float('nan')", None),
        ("torch.Size([2, 3])", "torch.Size([2, 3])", None),
        ("torch.float16", "torch.float32", "the value differs"),
        ("{'a': 1, 'b': [None, True, 'x']}", "{'a': 1, 'b': [None, True, 'x']}", None),
        ("{'a': 1}", "{'a': 1, 'b': 2}", "the keys differ"),
        ("(1, 2)", "[1, 2]", "a tuple where a list was expected"),
        # The standard library's dicts are dicts: a contract asking for one is met by each.
        ("__import__('collections').OrderedDict(a=1, b=[2])", "{'a': 1, 'b': [2]}", None),
        ("__import__('collections').defaultdict(list, a=[1])", "{'a': [1]}", None),
        ("__import__('collections').Counter('aab')", "{'a': 2, 'b': 1}", None),
        ("{'x': __import__('collections').OrderedDict(a=1)}", "{'x': {'a': 1}}", None),
        ("__import__('collections').OrderedDict(a=1)", "{'a': 2}", "a value differs"),
        ("[torch.zeros(2)]", "[torch.zeros(2), 1]", "the number of items differs"),
        ("torch.tensor([float('nan')])", "torch.tensor([float('nan')])", None),
        # A Parameter arrives as a plain tensor, and whether it tracks gradients is compared too.
        ("torch.nn.Parameter(torch.ones(2))", "torch.ones(2).requires_grad_()", None),
        (
            "torch.nn.Parameter(torch.ones(2))",
            "torch.ones(2)",
            "the values match, but the result tracks gradients (requires_grad is True) where the "
            "expected result does not",
        ),
        (
            "torch.ones(2)",
            "torch.ones(2).requires_grad_()",
            "the values match, but the result does not track gradients (requires_grad is False) "
            "where the expected result does",
        ),
        # size-1 dimensions with a stride other than 1 (a column of a one-row matrix)
        ("torch.arange(2.0).view(1, 2)[:, 1]", "torch.ones(1)", None),
        ("torch.arange(6.0).view(2, 1, 3)[:, :, 0]", "torch.tensor([[0.0], [3.0]])", None),
        (
            "torch.ones(2).to_sparse()",
            "torch.ones(2)",
            "`out` is a torch.sparse_coo tensor (convert it with .to_dense()), which a check "
            "cannot compare.",
        ),
    ],
)
def test_compare_values(pool, submitted, expected, message):
    checks = [{"name": "value", "code": "out = f()", "compare": "out"}]
    result = pool.grade(
        job_for(
            f"import torch\ndef f():\n    return {submitted}\n",
            f"import torch\ndef f():\n    return {expected}\n",
            checks,
        )
    )
    if message is None:
        assert result["status"] == "passed", result
    else:
        assert result["status"] == "failed"
        assert result["checks"][0]["message"].startswith(message)


def test_several_compare_expressions_name_the_one_that_differs(pool):
    checks = [{"name": "shape and sum", "code": "out = f()", "compare": ["out.shape", "out.sum()"]}]
    result = pool.grade(
        job_for(
            "import torch\ndef f():\n    return torch.ones(2, 2)\n",
            "import torch\ndef f():\n    return torch.ones(2, 2) * 2\n",
            checks,
        )
    )
    assert result["checks"][0]["message"] == (
        "`out.sum()`: values differ beyond the tolerance (rtol=1.3e-06, atol=1e-05)"
    )


def test_the_seed_is_reset_before_every_check(pool):
    # The submission draws extra random numbers in the first check; without a reset per check,
    # the second check's draw would differ from the reference's.
    code = """
    import torch
    def first():
        torch.rand(5)
        return 1
    def sample():
        return torch.rand(3)
    """
    reference = (
        "import torch\ndef first():\n    return 1\ndef sample():\n    return torch.rand(3)\n"
    )
    checks = [
        {"name": "first", "code": "out = first()", "compare": "out"},
        {"name": "sample", "code": "out = sample()", "compare": "out"},
    ]
    assert pool.grade(job_for(code, reference, checks))["status"] == "passed"


def test_check_helpers_are_available(pool):
    checks = [
        {
            "name": "helpers",
            "code": "out = [raises(f, -1), raises(f, 1), device, math.pi > 3,"
            " F.relu(torch.ones(1)), nn.Linear.__name__]",
            "compare": "out",
        }
    ]
    code = "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n"
    result = pool.grade(job_for(code, code, checks))
    assert result["status"] == "passed"


def test_checks_that_need_cuda_are_skipped_and_counted(pool):
    checks = [
        {"name": "cpu", "code": "out = 1", "compare": "out"},
        {
            "name": "gpu",
            "requires": "cuda",
            "code": "out = torch.ones(1, device='cuda')",
            "compare": "out",
        },
    ]
    result = pool.grade(job_for("", "", checks))
    assert (result["status"], result["skipped"]) == ("passed", 1)
    assert statuses(result) == {"cpu": "passed", "gpu": "skipped"}
    only_gpu = pool.grade(job_for("", "", checks[1:]))
    assert only_gpu["status"] == "error"
    assert only_gpu["message"] == (
        "Every check of this exercise needs CUDA, which this grader does not have."
    )


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "import torch.nn as nn\nm = nn.MultiheadAttention(4, 2)",
            "Your code uses what this exercise forbids: nn.MultiheadAttention (line 2).",
        ),
        (
            "import torch\nm = torch.nn.MultiheadAttention",
            "Your code uses what this exercise forbids: nn.MultiheadAttention (line 2).",
        ),
        (
            "from torch.nn import MultiheadAttention as M",
            "Your code uses what this exercise forbids: nn.MultiheadAttention (line 1).",
        ),
        (
            "import torch.nn.functional as fn\ny = fn.scaled_dot_product_attention",
            "Your code uses what this exercise forbids: F.scaled_dot_product_attention (line 2).",
        ),
        (
            "from torch import nn\nm = getattr(nn, 'MultiheadAttention')",
            "Your code uses what this exercise forbids: nn.MultiheadAttention (line 2).",
        ),
        ("def f(:\n    pass", "Your code does not parse: invalid syntax (line 1)."),
        ("x = 1\n" * 20_000, "Your code is 120000 bytes; the limit is 65536 bytes."),
    ],
)
def test_structural_rules_reject_before_running(pool, code, message):
    job = job_for(code, "", [{"name": "c", "code": "out = 1", "compare": "out"}])
    job["forbid"] = ["nn.MultiheadAttention", "F.scaled_dot_product_attention"]
    result = pool.grade(job)
    assert (result["status"], result["message"], result["checks"]) == ("rejected", message, [])


def test_allowed_names_that_look_alike_are_not_rejected(pool):
    code = "import torch.nn as nn\nimport torch.nn.functional as F\nm = nn.Linear\ny = F.softmax\n"
    job = job_for(code, "", [{"name": "c", "code": "out = 1", "compare": "out"}])
    job["forbid"] = ["nn.MultiheadAttention", "F.scaled_dot_product_attention"]
    assert pool.grade(job)["status"] == "passed"


def test_an_exception_while_loading_is_an_error_with_its_line(pool):
    result = pool.grade(
        job_for(
            "x = 1\ny = undefined_name\n", "", [{"name": "c", "code": "out = 1", "compare": "out"}]
        )
    )
    assert result["status"] == "error"
    assert result["message"] == (
        "Your code raised NameError at line 2 while loading: name 'undefined_name' is not defined"
    )
    assert result["checks"][0]["status"] == "error"


def test_output_is_captured(pool):
    code = "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n"
    result = pool.grade(job_for(code, "", [{"name": "c", "code": "out = 1", "compare": "out"}]))
    assert result["status"] == "passed"
    assert "to stdout" in result["output"] and "to stderr" in result["output"]


def test_a_broken_reference_is_reported_as_a_bug_in_the_exercise(pool):
    checks = [{"name": "c", "code": "out = f()", "compare": "out"}]
    result = pool.grade(job_for("def f():\n    return 1\n", "def f():\n    return 1 / 0\n", checks))
    assert result["status"] == "error"
    assert result["message"] == (
        "The exercise's reference solution failed, a bug in the exercise: "
        "check 'c' raised ZeroDivisionError: division by zero (line 2 of the reference)"
    )
    assert result["grader_failed"] is True  # never the learner's verdict
    assert result["exercise_fault"] is True  # and the exercise's fault, for the staff


def test_a_reference_its_own_forbid_list_refuses_is_a_bug_in_the_exercise(pool):
    checks = [{"name": "c", "code": "out = f()", "compare": "out"}]
    job = job_for("def f():\n    return 1\n", "def f():\n    return abs(-1)\n", checks)
    result = pool.grade({**job, "forbid": ["abs"]})
    assert result["status"] == "error"
    assert result["message"].startswith(
        "The exercise's reference solution is refused by its own rules, a bug in the exercise"
    )
    assert "abs (line 2)" in result["message"]
    assert result["grader_failed"] is True and result["exercise_fault"] is True


def test_a_malformed_job_is_the_callers_error(pool):
    with pytest.raises(ValueError, match="job.checks must be a non-empty list"):
        pool.grade({"code": "", "reference": "", "checks": []})
    with pytest.raises(ValueError, match=r"checks\[0\]: unknown keys \['expected'\]"):
        pool.grade(
            {"code": "", "reference": "", "checks": [{"name": "c", "compare": "1", "expected": 1}]}
        )


def test_snippets_run_in_order_in_one_namespace(pool):
    result = pool.run_snippets(
        [
            "import torch\nx = torch.arange(6).view(2, 3)",
            "assert x.stride() == (3, 1)\nprint(x.sum())",
        ],
        time_limit=10,
    )
    assert result["status"] == "passed"
    assert result["message"] == "All 2 blocks ran."
    assert [b["status"] for b in result["blocks"]] == ["passed", "passed"]
    assert "tensor(15)" in result["output"]


def test_snippets_start_from_the_same_random_state_every_run(pool):
    # An answer block that draws random inputs must not pass on one run and fail on the next.
    blocks = ["import torch, random\nprint(torch.rand(3).tolist(), random.random())"]
    first, second = pool.run_snippets(blocks, 10), pool.run_snippets(blocks, 10)
    assert first["status"] == second["status"] == "passed"
    assert first["output"] == second["output"] and "[" in first["output"]


def test_a_failing_snippet_stops_the_rest(pool):
    result = pool.run_snippets(["x = 1", "assert x == 2, 'x is not 2'", "print('never')"], 10)
    assert result["status"] == "failed"
    assert result["message"] == "Block 2 raised AssertionError: x is not 2 (line 1 of the block)"
    assert [b["status"] for b in result["blocks"]] == ["passed", "failed", "skipped"]
    assert "never" not in result["output"]


def test_snippets_are_sandboxed_and_time_limited(pool):
    result = pool.run_snippets(["import socket\nsocket.socket()"], 10)
    assert result["status"] == "failed"
    assert result["blocks"][0]["message"].startswith("raised PermissionError")
    slow = pool.run_snippets(["while True:\n    pass"], time_limit=1)
    assert slow["status"] == "timed_out"


def test_what_differs_is_said_without_a_guessed_cause_and_with_the_digits_that_differ(pool):
    checks = [
        {"name": "raised", "code": "out = gen.each(gen.floats((2,)), f)", "compare": "out"},
        {"name": "close", "visible": True, "code": "out = g()", "compare": "out"},
        {"name": "wants error", "code": "out = gen.each(gen.floats((2,)), h)", "compare": "out"},
    ]
    reference = (
        "import torch\ndef f(x):\n    return torch.zeros(2)\n"
        "def g():\n    return torch.tensor([7.0123e-04], dtype=torch.float64)\n"
        "def h(x):\n    if x.numel() == 0:\n        raise ValueError('empty')\n    return x\n"
    )
    code = (
        "import torch\ndef f(x):\n    raise RuntimeError('boom')\n"
        "def g():\n    return torch.tensor([7.0131e-04], dtype=torch.float64)\n"
        "def h(x):\n    return x\n"
    )
    raised, close, wants = pool.grade(job_for(code, reference, checks))["checks"]
    # The learner's own exception, named as raised (not "a str where a Tensor was expected").
    assert (
        raised["message"] == "an item differs: RuntimeError was raised where a tensor was expected"
    )
    # At torch's 4 decimals both print as 7.0123e-04 or alike: more digits until they differ.
    assert close["message"].endswith(
        "expected tensor([0.00070123], dtype=torch.float64), "
        "got tensor([0.00070131], dtype=torch.float64)"
    ), close["message"]
    assert wants["message"] == "an item differs: an exception was expected, but a tensor came back"


def test_a_missing_exception_is_said_in_words(pool):
    checks = [
        {"name": "rejects", "visible": True, "code": "e = raises(f, -1)", "compare": "e"},
        {"name": "hidden rejects", "code": "e = raises(f, -2)", "compare": "e"},
        {"name": "accepts", "visible": True, "code": "e = raises(f, 1)", "compare": "e"},
    ]
    reference = "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n"
    code = "def f(x):\n    if x > 0:\n        raise TypeError(x)\n    return x\n"
    job = {"code": code, "reference": reference, "checks": checks}
    messages = [c["message"] for c in pool.grade(job)["checks"]]
    assert messages == [
        "expected ValueError to be raised, but nothing was raised",
        "an exception was expected, but nothing was raised",
        "nothing should be raised, but TypeError was",
    ]
