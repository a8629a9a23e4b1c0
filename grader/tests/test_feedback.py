"""Feedback that is never wrong (issue 27), through the real sandbox: the smallest generated input
on which a submission differs, the stress family in plain words, and a misconception named only
when a known wrong solution behaves the same on every failing check."""

from __future__ import annotations

import textwrap


def job_for(code: str, reference: str, checks: list[dict], **extra) -> dict:
    return {
        "code": textwrap.dedent(code),
        "reference": textwrap.dedent(reference),
        "checks": checks,
        **extra,
    }


VARIANCE = """
import torch
def variance(x):
    return ((x - x.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1)
"""
VARIANCE_IN_FLOAT32 = """
import torch
def variance(x):
    y = x.float()
    return ((y - y.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1).double()
"""
# The contract is float64 inputs; the check keeps float32's precision of the result, so float32
# rounding alone passes and only a float32 computation's cancellation at 1e4 fails.
VARIANCE_CHECKS = [
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


def test_a_float32_computed_float64_solution_gets_the_offset_family_and_a_small_input(pool):
    assert pool.grade(job_for(VARIANCE, VARIANCE, VARIANCE_CHECKS))["status"] == "passed"
    result = pool.grade(job_for(VARIANCE_IN_FLOAT32, VARIANCE, VARIANCE_CHECKS))
    assert result["status"] == "failed"
    entry = result["checks"][0]
    example = entry["counterexample"]
    assert (example["family"], example["size"]) == ("offset", 12)
    assert example["where"] == "the values are large (around 1e4) and close together"
    assert example["property"] == "value"
    assert "ordinary" in example["passing_families"]
    assert example["failing_families"] == ["offset"]
    # The input is the 3x4 float64 tensor, kept with its indentation; expected and got differ.
    lines = example["input"].splitlines()
    assert lines[0].startswith("tensor([[")
    assert len(lines) == 4 and lines[1].startswith("        [")
    assert lines[-1].strip() == "dtype=torch.float64)"
    assert example["expected"] != example["got"]
    # Hidden: the check's own message still names only the property.
    assert "expected" not in entry["message"]
    assert result["message"].endswith(
        "Matches on ordinary inputs; differs when the values are large (around 1e4) and "
        "close together."
    )


def test_a_fixed_hidden_check_never_shows_its_input(pool):
    checks = [VARIANCE_CHECKS[1]]
    result = pool.grade(job_for("def variance(x):\n    return x.sum(-1)\n", VARIANCE, checks))
    assert result["status"] == "failed"
    assert "counterexample" not in result["checks"][0]
    assert "case" not in result["checks"][0]


def test_the_smallest_case_is_chosen_even_when_cases_are_joined_out_of_order(pool):
    # Each gen.floats list is small-first, but joined the bigger shape comes first.
    checks = [
        {
            "name": "two shapes",
            "code": "big = gen.floats((6, 8), families=['ordinary'])\n"
            "small = gen.floats((2, 3), families=['ordinary'])\n"
            "outs = gen.each(big + small, lambda x: variance(x))",
            "compare": "outs",
        }
    ]
    result = pool.grade(job_for("def variance(x):\n    return x.sum(-1)\n", VARIANCE, checks))
    example = result["checks"][0]["counterexample"]
    assert example["size"] == 6
    assert "Matches on ordinary inputs" not in result["message"]


def test_a_mistake_on_ordinary_inputs_is_shown_on_one_not_on_a_smaller_edge_case(pool):
    checks = [
        {
            "name": "edge sizes",
            "code": "cases = gen.floats((3, 4), families=['empty', 'single', 'ordinary'])\n"
            "outs = gen.each(cases, variance)",
            "compare": "outs",
        }
    ]
    code = "import torch\ndef variance(x):\n    return x.sum(-1)\n"
    result = pool.grade(job_for(code, VARIANCE, checks))
    example = result["checks"][0]["counterexample"]
    # "single" (one value) fails too and is smaller; the ordinary case is the one shown.
    assert set(example["failing_families"]) == {"single", "ordinary"}
    assert (example["family"], example["size"]) == ("ordinary", 12)


def test_two_generated_lists_in_one_check_each_find_their_own_cases(pool):
    checks = [
        {
            "name": "two lists",
            "code": "a = gen.each(gen.floats((2, 4), families=['ordinary']), variance)\n"
            "b = gen.each(gen.floats((3, 4), families=['ordinary', 'empty']), "
            "lambda x: variance(x * 2))",
            "compare": ["a", "b"],
        }
    ]
    # Right on a (x), wrong on b (2x): the case shown is b's, with b's input.
    code = (
        VARIANCE
        + "\n_calls = []\ndef variance(x, _v=variance):\n"
        + ("    _calls.append(1)\n    return _v(x) * (1 if len(_calls) == 1 else 3)\n")
    )
    result = pool.grade(job_for(code, VARIANCE, checks))
    example = result["checks"][0]["counterexample"]
    assert (example["family"], example["size"]) == ("ordinary", 12)
    assert example["input"].count("\n") == 2  # a 3x4 tensor: b's input, not a's 2x4


def test_an_exception_on_one_case_is_named_as_the_property_that_differs(pool):
    code = """
    import torch
    def variance(x):
        if x.shape[0] == 0:
            raise ValueError("empty")
        return ((x - x.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1)
    """
    checks = [
        {
            "name": "edge sizes",
            "code": "outs = gen.each(gen.floats((3, 4), families=['ordinary', 'empty']), variance)",
            "compare": "outs",
        }
    ]
    result = pool.grade(job_for(code, VARIANCE, checks))
    example = result["checks"][0]["counterexample"]
    assert (example["family"], example["property"]) == ("empty", "exception")
    assert example["got"] == "'ValueError'"
    assert result["message"].endswith(
        "Matches on ordinary inputs; differs when the input is empty (a dimension of size 0)."
    )


def test_a_big_counterexample_is_shown_bounded_with_its_indentation_and_no_input(pool):
    checks = [
        {
            "name": "one big case",
            "code": "outs = gen.each(gen.floats((48, 48), families=['ordinary']), lambda x: x * 2)",
            "compare": "outs",
        }
    ]
    reference = "def unused():\n    pass\n"
    # The check scales x itself: both runs agree, so make the submission differ through torch.
    code = (
        "import torch\n_mul = torch.Tensor.__mul__\n"
        "torch.Tensor.__mul__ = lambda a, b: _mul(a, b + 1)\n"
    )
    result = pool.grade(job_for(code, reference, checks))
    example = result["checks"][0]["counterexample"]
    assert example["size"] == 48 * 48 and example["input"] is None  # too big to keep
    lines = example["expected"].splitlines()
    assert 3 <= len(lines) <= 8 and all(len(line) <= 96 for line in lines)
    assert lines[1].startswith("        ")  # torch's indentation, kept


# --- the misconception, only when certain -------------------------------------------------

DOUBLE = "def double(x):\n    return x * 2\n"
ADDS_TWO = "def double(x):\n    return x + 2\n"
DOUBLE_CHECKS = [
    {"name": "ones", "code": "out = double(torch.ones(2))", "compare": "out"},
    {"name": "a range", "code": "out = double(torch.arange(7.0) * 13)", "compare": "out"},
    {"name": "zero stays zero", "code": "out = double(torch.zeros(3))", "compare": "out"},
    {
        "name": "rejects a string",
        "code": "err = raises(double, 'a')",
        "compare": "err",
    },
]


def diagnose(pool, code: str, wrong: dict[str, str]) -> dict:
    return pool.grade(job_for(code, DOUBLE, DOUBLE_CHECKS, wrong=wrong))


def test_a_known_wrong_solution_is_still_named(pool):
    result = diagnose(pool, ADDS_TWO, {"adds_two": ADDS_TWO})
    assert result["diagnosis"] == {"wrong": "adds_two", "confidence": "outputs"}


def test_a_reference_equivalent_solution_gets_no_diagnosis(pool):
    result = diagnose(pool, "def double(x):\n    return x + x\n", {"adds_two": ADDS_TWO})
    assert result["status"] == "passed" and result["diagnosis"] is None


def test_the_same_failing_checks_with_other_values_get_no_misconception(pool):
    # x * 3 fails exactly the checks x + 2 fails, with other values: a guess, not a diagnosis.
    result = diagnose(pool, "def double(x):\n    return x * 3\n", {"adds_two": ADDS_TWO})
    assert result["status"] == "failed" and result["diagnosis"] is None


def test_a_wrong_solution_that_fails_more_checks_is_not_named(pool):
    # Same outputs where the submission fails, but the known mistake also fails "zero stays
    # zero", which the submission passes: not the same mistake.
    code = "def double(x):\n    return x + 2 * (x != 0)\n"
    result = diagnose(pool, code, {"adds_two": ADDS_TWO})
    assert result["status"] == "failed" and result["diagnosis"] is None


def test_exceptions_match_by_class_and_message(pool):
    checks = [{"name": "negative", "code": "out = f(-1)", "compare": "out"}]
    reference = "def f(x):\n    return abs(x)\n"
    known = "def f(x):\n    if x < 0:\n        raise ValueError('negative input')\n    return x\n"
    other = "def f(x):\n    if x < 0:\n        raise ValueError('x must be >= 0')\n    return x\n"
    asserted = "def f(x):\n    assert x >= 0, 'negative input'\n    return x\n"
    wrong = {"raises": known}
    named = pool.grade(job_for(known, reference, checks, wrong=wrong))
    assert named["diagnosis"] == {"wrong": "raises", "confidence": "outputs"}
    for code in (other, asserted):
        assert pool.grade(job_for(code, reference, checks, wrong=wrong))["diagnosis"] is None


def test_two_known_mistakes_that_behave_alike_name_neither(pool):
    also_adds = "def double(x):\n    return 2 + x\n"
    result = diagnose(pool, ADDS_TWO, {"adds_two": ADDS_TWO, "also": also_adds})
    assert result["status"] == "failed" and result["diagnosis"] is None


def test_a_case_with_several_outputs_shows_the_part_that_differs(pool):
    # A loss and its gradients: the loss matches, the gradient does not. Shown whole, the
    # differing value is cut off after the equal ones ("..."), and expected reads like got.
    reference = """
    import torch
    def f(x):
        return [x.sum(), [x * 0, x * 2]]
    """
    wrong = reference.replace("x * 2", "x * 3")
    checks = [{"name": "g", "code": "outs = gen.each(gen.floats((2, 3)), f)", "compare": "outs"}]
    example = pool.grade(job_for(wrong, reference, checks))["checks"][0]["counterexample"]
    assert example["at"] == "[1][1]"
    assert example["expected"] != example["got"]
    assert example["expected"].startswith("tensor(") and example["property"] == "value"
    # Containers that differ in length are shown whole.
    longer = reference.replace("[x * 0, x * 2]", "[x * 0, x * 2, x]")
    example = pool.grade(job_for(longer, reference, checks))["checks"][0]["counterexample"]
    assert example["at"] == "[1]" and example["property"] == "length"


def test_a_case_whose_check_draws_more_than_its_input_says_so(pool):
    # The check feeds a warm-up batch it draws itself before the case's input: the input shown
    # is not all the case used, and the counterexample must not present it as if it were.
    reference = """
    import torch
    def running_sum(batches):
        return sum(b.sum() for b in batches)
    """
    wrong = reference.replace("b.sum()", "b.abs().sum()")
    warm = "outs = gen.each(gen.floats((2, 3)), lambda x: running_sum([gen.randn(2, 3), x]))"
    alone = "outs = gen.each(gen.floats((2, 3)), lambda x: running_sum([x]))"
    checks = [{"name": "warm", "code": warm, "compare": "outs"}]
    example = pool.grade(job_for(wrong, reference, checks))["checks"][0]["counterexample"]
    assert example["also_drawn"] is True
    checks = [{"name": "alone", "code": alone, "compare": "outs"}]
    example = pool.grade(job_for(wrong, reference, checks))["checks"][0]["counterexample"]
    assert example["also_drawn"] is False
    assert example["input"].startswith("tensor(")


def test_a_case_without_a_tensor_is_not_described_by_dimensions(pool):
    # A word-count dict in the "empty" family: "a dimension of size 0" would be false of it.
    reference = "def total(counts):\n    return sum(counts.values())\n"
    wrong = "def total(counts):\n    return max(counts.values())\n"
    make = (
        "def make(family, g):\n"
        "    n = {'empty': 0, 'single': 1}.get(family, 3)\n"
        "    return {f'w{i}': int(g.randint(1, 9)) for i in range(n)}\n"
    )
    checks = [
        {
            "name": "counts",
            "code": make + "outs = gen.each(gen.cases(make, ['empty', 'single']), total)",
            "compare": "outs",
        }
    ]
    example = pool.grade(job_for(wrong, reference, checks))["checks"][0]["counterexample"]
    assert example["family"] == "empty"
    assert example["where"] == "the input is empty"
    assert example["input"] == "{}"


def test_every_argument_of_a_case_is_shown_or_said_to_be_left_out(pool):
    # The fifth argument decides the output here: a case shown without it would mislead.
    def job(n: int, code: str) -> dict:
        make = f"def make(family, g):\n    return tuple(g.randn(2) for _ in range({n}))\n"
        check = make + "outs = gen.each(gen.cases(make, ['ordinary']), f)"
        return job_for(
            code,
            "def f(*xs):\n    return xs[-1]\n",
            [{"name": "f", "code": check, "compare": "outs"}],
        )

    example = pool.grade(job(5, "def f(*xs):\n    return xs[0]\n"))["checks"][0]["counterexample"]
    assert "argument 5: tensor([" in example["input"]
    example = pool.grade(job(11, "def f(*xs):\n    return xs[0]\n"))["checks"][0]["counterexample"]
    lines = example["input"].splitlines()
    assert lines[-1] == "(3 more arguments not shown)" and len(lines) <= 16


def test_a_case_that_raises_before_drawing_does_not_shift_the_later_cases(pool):
    # gen.grads draws the upstream gradient after the forward: a forward that raises on the
    # empty case skips that draw. The later cases must still see the reference's gradients, so
    # only the empty family fails, never the ones the code gets right.
    reference = "def f(x):\n    return x * 2\n"
    wrong = (
        "def f(x):\n    if x.numel() == 0:\n        raise ValueError('empty')\n    return x * 2\n"
    )
    check = "outs = gen.each(gen.floats((2, 3)), lambda x: gen.grads(f, x.requires_grad_()))"
    checks = [{"name": "grads", "code": check, "compare": "outs"}]
    example = pool.grade(job_for(wrong, reference, checks))["checks"][0]["counterexample"]
    assert example["failing_families"] == ["empty"]
    assert "ordinary" in example["passing_families"]


OUTPUT_SIZE = """
def output_size(size, kernel, stride=1, padding=0, dilation=1):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
"""
# Ignores dilation: right for every call whose fifth argument is 1.
OUTPUT_SIZE_NO_DILATION = OUTPUT_SIZE.replace("dilation * (kernel - 1)", "(kernel - 1)")


def test_every_argument_of_a_call_is_shown_and_ints_are_not_counted_as_values(pool):
    # The fifth argument decides the result as much as the first four: a call shown without it
    # gives another result than the expected one. And ints hold no tensor values: "0 values"
    # would misdescribe them, so the count is left out.
    make = "lambda family, g: (8, 4, 2, 2, {'no-dilation': 1}.get(family, 3))"
    checks = [
        {
            "name": "settings",
            "code": f"outs = gen.each(gen.cases({make}, ['no-dilation', 'ordinary']), output_size)",
            "compare": "outs",
        }
    ]
    result = pool.grade(job_for(OUTPUT_SIZE_NO_DILATION, OUTPUT_SIZE, checks))
    example = result["checks"][0]["counterexample"]
    assert example["input"].splitlines() == [
        "argument 1: 8",
        "argument 2: 4",
        "argument 3: 2",
        "argument 4: 2",
        "argument 5: 3",
    ]
    assert (example["expected"], example["got"]) == ("2", "5")
    assert example["size"] is None and example["passing_families"] == ["no-dilation"]
    # More arguments than are shown are counted on a last line, never dropped unsaid.
    many = "(8, 4, 2, 2, 3) + (0,) * 7"
    checks[0]["code"] = (
        f"outs = gen.each(gen.cases(lambda family, g: {many}, ['ordinary']), "
        "lambda *a: output_size(*a[:5]))"
    )
    example = pool.grade(job_for(OUTPUT_SIZE_NO_DILATION, OUTPUT_SIZE, checks))["checks"][0]
    lines = example["counterexample"]["input"].splitlines()
    assert lines[-2:] == ["argument 8: 0", "(4 more arguments not shown)"]
