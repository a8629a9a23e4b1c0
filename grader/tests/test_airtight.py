"""Checks airtight by construction (issue 23), through the real sandbox: generated inputs and
the smallest failing case, float64 tolerances that reject a float32 computation, mixed modes, and
per-run seeds for every hidden check."""

from __future__ import annotations

import textwrap

from grader import jobs, mutate


def job_for(code: str, reference: str, checks: list[dict]) -> dict:
    return {
        "code": textwrap.dedent(code),
        "reference": textwrap.dedent(reference),
        "checks": checks,
    }


SOFTMAX = """
import torch
def softmax(x):
    return (x - x.amax(dim=-1, keepdim=True)).softmax(dim=-1)
"""


def test_a_float64_function_computed_in_float32_fails_a_float64_check(pool):
    reference = """
    import torch
    def variance(x):
        return ((x - x.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1)
    """
    float32 = """
    import torch
    def variance(x):
        y = x.float()
        return ((y - y.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1).double()
    """
    checks = [{"name": "float64", "code": "out = variance(torch.randn(4, 16, dtype=torch.float64))",
               "compare": "out"}]  # fmt: skip
    assert pool.grade(job_for(reference, reference, checks))["status"] == "passed"
    result = pool.grade(job_for(float32, reference, checks))
    assert result["status"] == "failed"
    # The message still states the tolerance, and it is float64's own.
    assert result["checks"][0]["message"] == (
        "values differ beyond the tolerance (rtol=1e-10, atol=1e-12)"
    )


def test_a_check_of_its_own_cannot_loosen_float64_past_float32_rounding(pool):
    reference = "def f(x):\n    return x.exp()\n"
    float32 = "def f(x):\n    return x.float().exp().double()\n"
    checks = [{"name": "loose", "code": "out = f(torch.randn(64, dtype=torch.float64))",
               "compare": "out", "rtol": 1e-4, "atol": 1e-4}]  # fmt: skip
    result = pool.grade(job_for(float32, reference, checks))
    assert result["status"] == "failed"
    assert "rtol=1e-09, atol=1e-09" in result["checks"][0]["message"]


def test_a_mode_restoring_bug_fails_a_mixed_mode_check(pool):
    reference = """
    import torch
    def predict(model, x):
        modes = [(m, m.training) for m in model.modules()]
        model.eval()
        with torch.no_grad():
            out = model(x)
        for m, flag in modes:
            m.training = flag
        return out
    """
    # Restores one flag for the whole tree: right whenever every submodule had the same mode.
    bug = """
    import torch
    def predict(model, x):
        was = model.training
        model.eval()
        with torch.no_grad():
            out = model(x)
        model.train(was)
        return out
    """
    uniform = {
        "name": "restores the mode",
        "code": "model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.Linear(3, 1))\n"
        "out = predict(model, torch.randn(2, 3))\nmodes = gen.modes(model)",
        "compare": ["out", "modes"],
    }
    mixed = {
        "name": "restores mixed per-submodule modes",
        "code": "model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.Linear(3, 1))\n"
        "before = gen.mixed_modes(model)\nout = predict(model, torch.randn(2, 3))\n"
        "after = gen.modes(model)",
        "compare": ["before", "after", "out"],
    }
    assert pool.grade(job_for(reference, reference, [uniform, mixed]))["status"] == "passed"
    result = pool.grade(job_for(bug, reference, [uniform, mixed]))
    assert {c["name"]: c["status"] for c in result["checks"]} == {
        "restores the mode": "passed",
        "restores mixed per-submodule modes": "failed",
    }
    assert result["checks"][1]["message"].startswith("`after`: ")


def test_a_generated_check_names_the_smallest_failing_family(pool):
    naive = """
    import torch
    def softmax(x):
        e = x.exp()
        return e / e.sum(dim=-1, keepdim=True)
    """
    checks = [
        {
            "name": "every family",
            "code": "cases = gen.floats((3, 5))\nouts = gen.each(cases, softmax)",
            "compare": "outs",
        }
    ]
    assert pool.grade(job_for(SOFTMAX, SOFTMAX, checks))["status"] == "passed"
    result = pool.grade(job_for(naive, SOFTMAX, checks))
    entry = result["checks"][0]
    assert entry["status"] == "failed"
    # exp overflows first on the 1e4 offset (15 values; empty, single and batch-of-one pass).
    assert entry["case"] == {"family": "offset", "size": 15}
    # (How the message locates it inside the list is helper "sandbox"'s part, issue 24.)
    assert entry["message"].endswith("NaN or infinite values where finite ones were expected")


def test_generated_inputs_do_not_depend_on_what_the_submission_draws(pool):
    # The submission consumes the global RNG and reseeds it; gen has its own generator.
    greedy = """
    import torch
    def softmax(x):
        torch.manual_seed(123)
        torch.rand(1000)
        return (x - x.amax(dim=-1, keepdim=True)).softmax(dim=-1)
    """
    checks = [
        {
            "name": "twice",
            "code": "a = gen.each(gen.floats((2, 4)), softmax)\n"
            "b = gen.each(gen.floats((2, 4)), softmax)",
            "compare": ["a", "b"],
        }
    ]
    assert pool.grade(job_for(greedy, SOFTMAX, checks))["status"] == "passed"


def test_a_model_built_under_gen_seeded_does_not_depend_on_what_the_submission_drew(pool):
    # A correct solution that draws from the global stream (another init, a dropout) must not
    # change the weights of a model the check builds after calling it (the rng-probe's class).
    reference = """
    import torch
    def double(x):
        return x * 2
    """
    drawing = """
    import torch, random
    def double(x):
        torch.rand(100)
        random.random()
        return x + x
    """
    build = (
        "first = double(gen.randn(3))\n"
        "with gen.seeded():\n"
        "    layer = torch.nn.Linear(3, 2)\n"
        "    order = torch.randperm(5)\n"
        "out = layer(double(gen.randn(3)))"
    )
    checks = [{"name": "seeded", "code": build, "compare": ["first", "out", "order"]}]
    assert pool.grade(job_for(drawing, reference, checks))["status"] == "passed"
    # Without it, the same check depends on the learner's draws: the guard above is needed.
    unseeded = build.replace("with gen.seeded():\n    ", "").replace("\n    ", "\n")
    checks = [{"name": "unseeded", "code": unseeded, "compare": ["first", "out", "order"]}]
    assert pool.grade(job_for(drawing, reference, checks))["status"] == "failed"


def test_a_generated_check_on_which_the_reference_raises_on_every_case_is_a_bank_bug(pool):
    # Such a check compares exception names only: a wrong solution that raises too passes it.
    reference = """
    import torch
    def first_row(x):
        return x[0, 0, 0]
    """
    code = "outs = gen.each(gen.floats((2, 3)), first_row)"
    checks = [{"name": "g", "code": code, "compare": "outs"}]
    result = pool.grade(job_for(reference, reference, checks))
    assert result["status"] == "error" and result["exercise_fault"] is True
    assert "raised on all" in result["message"] and "IndexError" in result["message"]
    # A check of the errors themselves says so, and then grades as usual.
    checks[0]["code"] += ", expect_raises=True)"
    checks[0]["code"] = checks[0]["code"].replace("first_row)", "first_row", 1)
    assert pool.grade(job_for(reference, reference, checks))["status"] == "passed"
    # Raising on some edge cases (here the non-contiguous one) is a contract like any other.
    fine = reference.replace("x[0, 0, 0]", "x.sum() if x.is_contiguous() else x[0, 0, 0]")
    checks[0]["code"] = "outs = gen.each(gen.floats((2, 3)), first_row)"
    assert pool.grade(job_for(fine, fine, checks))["status"] == "passed"


def test_a_generated_check_whose_ordinary_case_raises_in_the_reference_is_a_bank_bug(pool):
    # A domain whose plain member is invalid is declared wrong (a shape with one dimension too
    # many): the check tests only its edge cases, and those by exception names.
    reference = """
    import torch
    def f(x):
        if x > 1:
            raise RuntimeError("shape mismatch")
        return x * 2
    """
    code = (
        "make = lambda family, g: {'single': 1.0, 'ordinary': 2.0, 'ties': 0.5}[family]\n"
        "outs = gen.each(gen.cases(make, ['single', 'ordinary', 'ties']), f)"
    )
    checks = [{"name": "g", "code": code, "compare": "outs"}]
    result = pool.grade(job_for(reference, reference, checks))
    assert result["status"] == "error" and result["exercise_fault"] is True
    assert "raised on the ordinary case" in result["message"]
    # An edge family may raise by contract: the check grades as usual.
    edge = code.replace("'ordinary': 2.0, 'ties': 0.5", "'ordinary': 0.5, 'ties': 2.0")
    assert pool.grade(job_for(reference, reference, [{**checks[0], "code": edge}]))["status"] == (
        "passed"
    )


def test_every_hidden_check_runs_on_a_per_run_seed_and_visible_ones_on_seed_zero():
    hidden = jobs.normalize_check({"name": "h", "code": "", "compare": "1"}, 0)
    visible = jobs.normalize_check({"name": "v", "visible": True, "code": "", "compare": "1"}, 1)
    assert hidden["seed"] == jobs.PER_RUN
    assert visible["seed"] is None


def test_hidden_inputs_change_between_seeds_and_the_reference_sees_the_same(pool):
    reference = "import torch\ndef draw():\n    return torch.rand(3)\n"
    checks = [{"name": "draw", "code": "out = draw()", "compare": "out"}]
    # A submission that replays the values of seed 0 fails once the seed is drawn per run.
    replay = (
        "import torch\ndef draw():\n    g = torch.Generator().manual_seed(0)\n"
        "    return torch.rand(3, generator=g)\n"
    )
    assert pool.grade(job_for(reference, reference, checks))["status"] == "passed"
    assert pool.grade(job_for(replay, reference, checks))["status"] == "failed"


def test_the_float32_and_detach_mutants_of_a_float64_reference_fail_its_checks(pool):
    reference = """
    import torch
    def standardize(x):
        centered = x - x.mean(dim=-1, keepdim=True)
        return centered / centered.pow(2).mean(dim=-1, keepdim=True).sqrt()
    """
    checks = [
        {
            "name": "float64 with an offset, and its gradient",
            "code": "x = (torch.randn(3, 8, dtype=torch.float64) + 100).requires_grad_()\n"
            "out = standardize(x)\nout.pow(3).sum().backward()",
            "compare": ["out", "x.grad"],
        }
    ]
    found = {m.id: m for m in mutate.mutants(textwrap.dedent(reference))}
    assert pool.grade(job_for(reference, reference, checks))["status"] == "passed"
    for mutant_id in ("float32:standardize", "keepdim:4:1", "mean-sum:5:1"):
        result = pool.grade(job_for(found[mutant_id].source, reference, checks))
        assert result["status"] == "failed", mutant_id
    detached = pool.grade(job_for(found["detach-added:standardize"].source, reference, checks))
    assert detached["status"] == "failed"  # backward() through a detached output raises


LINEAR_REFERENCE = """
import torch
from torch import nn
class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
    def forward(self, x):
        return self.linear(x) * 2
"""


def test_a_detached_output_fails_even_a_check_that_compares_only_values(pool):
    # No backward() in the check: the comparison holds requires_grad against the reference's.
    detached = LINEAR_REFERENCE.replace(
        "return self.linear(x) * 2", "return (self.linear(x) * 2).detach()"
    )
    checks = [{"name": "values", "code": "out = Scaled()(torch.randn(2, 4))", "compare": "out"}]
    assert pool.grade(job_for(LINEAR_REFERENCE, LINEAR_REFERENCE, checks))["status"] == "passed"
    result = pool.grade(job_for(detached, LINEAR_REFERENCE, checks))
    assert result["status"] == "failed"
    assert "does not track gradients" in result["checks"][0]["message"]


def test_an_output_that_tracks_gradients_where_the_reference_does_not_fails(pool):
    reference = (
        "import torch\ndef predict(model, x):\n    with torch.no_grad():\n        return model(x)\n"
    )
    leaky = "def predict(model, x):\n    return model(x)\n"
    checks = [{"name": "values", "code": "out = predict(torch.nn.Linear(3, 2), torch.randn(2, 3))",
               "compare": "out"}]  # fmt: skip
    result = pool.grade(job_for(leaky, reference, checks))
    assert result["status"] == "failed"
    assert (
        "tracks gradients (requires_grad is True) where the expected result does not"
        in (result["checks"][0]["message"])
    )


def test_a_detached_output_fails_a_gradient_check_of_gen_grads(pool):
    # gen.grads differentiates a seeded random projection of the output with respect to the
    # inputs and the parameters; a function that detaches its output has no gradient at all,
    # and one that blocks the gradient of an input has a wrong one.
    reference = """
    import torch
    def gate(x, w):
        return torch.sigmoid(x @ w) * x.sum(dim=-1, keepdim=True)
    """
    blocked = reference.replace("x.sum(", "x.detach().sum(")
    detached = reference.replace("return torch", "return (torch").rstrip() + ").detach()\n"
    code = "out = gen.grads(gate, gen.randn(3, 4), gen.randn(4, 2))"
    checks = [{"name": "gradients", "code": code, "compare": "out"}]
    assert pool.grade(job_for(reference, reference, checks))["status"] == "passed"
    for wrong in (blocked, detached):
        assert pool.grade(job_for(wrong, reference, checks))["status"] == "failed"
    code = "torch.manual_seed(1)\nm = Scaled()\nout = gen.grads(m, gen.randn(2, 4))"
    module_checks = [{"name": "parameter gradients", "code": code, "compare": "out"}]
    frozen_bias = LINEAR_REFERENCE.replace(
        "return self.linear(x) * 2",
        "return x @ self.linear.weight.T * 2 + self.linear.bias.detach() * 2",
    )
    assert (
        pool.grade(job_for(LINEAR_REFERENCE, LINEAR_REFERENCE, module_checks))["status"] == "passed"
    )
    assert pool.grade(job_for(frozen_bias, LINEAR_REFERENCE, module_checks))["status"] == "failed"


def test_a_python_float_of_a_float64_computation_compares_at_float64_tolerance(pool):
    reference = "import torch\ndef total(x):\n    return x.sum().item()\n"
    float32 = "import torch\ndef total(x):\n    return x.float().sum().item()\n"
    checks = [{"name": "float", "code": "out = total(torch.randn(50, dtype=torch.float64) + 3)",
               "compare": "out"}]  # fmt: skip
    assert pool.grade(job_for(reference, reference, checks))["status"] == "passed"
    result = pool.grade(job_for(float32, reference, checks))
    assert result["status"] == "failed"
    assert "rtol=1e-10" in result["checks"][0]["message"]
    # A float32 result keeps float32's tolerance: summing in another order still passes.
    float32_contract = [
        {"name": "float", "code": "out = total(torch.randn(50) + 3)", "compare": "out"}
    ]
    reordered = "import torch\ndef total(x):\n    return x.flip(0).cumsum(0)[-1].item()\n"
    assert pool.grade(job_for(reordered, reference, float32_contract))["status"] == "passed"


def test_a_float32_or_detach_mutant_that_never_acts_in_a_check_is_inert(pool):
    reference = """
    import torch
    def count(x, n):
        return torch.bincount(x, minlength=n)
    def center(x):
        return x - x.mean()
    """
    checks = [
        {"name": "counts", "code": "out = count(torch.tensor([0, 2, 2]), 4)", "compare": "out"},
        {"name": "center", "code": "out = center(torch.randn(5))", "compare": "out"},
    ]
    found = {m.id: m for m in mutate.mutants(textwrap.dedent(reference))}
    for mutant_id in ("float32:count", "float32:center"):
        # float32 inputs only: neither wrapper ever acts, so both mutants pass...
        assert pool.grade(job_for(found[mutant_id].source, reference, checks))["status"] == "passed"
    # ...but only count's probe passes too (no float tensor reaches it: inert); center's fails,
    # so its surviving mutant stays a hole (a float64 check is missing) until a check kills it.
    assert (
        pool.grade(job_for(found["float32:count"].probe, reference, checks))["status"] == "passed"
    )
    assert (
        pool.grade(job_for(found["float32:center"].probe, reference, checks))["status"] == "failed"
    )
