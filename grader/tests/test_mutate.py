"""The mutation operators (pure syntax-tree work) and the ratchet's rules (issue 23)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import pytest

from grader import jobs, mutate, mutation

SOURCE = textwrap.dedent(
    '''
    """A module docstring."""
    from __future__ import annotations

    import copy
    import torch


    def norm(x, eps=1e-5):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps)


    def head(x, n):
        rows = [x[i] for i in range(n)]
        return x[1:n], rows, x.sum(0)


    def pick(scores, limit):
        top = scores.argmax(dim=-1)
        clipped = scores.clamp(max=limit)
        mask = scores < limit
        return top, clipped.detach(), mask, scores.clone(), copy.deepcopy(scores)


    def loss(logits, target):
        return torch.nn.functional.cross_entropy(logits, target, reduction="mean")


    def evaluate(model, x):
        was = model.training
        model.eval()
        with torch.no_grad():
            out = model(x)
        model.train(was)
        return out


    def restore(model, modes, weight):
        for m, flag in zip(model.modules(), modes):
            m.training = flag
        weight.mul(2)
    '''
)


@pytest.fixture(scope="module")
def found() -> dict[str, mutate.Mutant]:
    return {m.id: m for m in mutate.mutants(SOURCE)}


def changed(found: dict[str, mutate.Mutant], mutant_id: str) -> str:
    mutant = found[mutant_id]
    compile(mutant.source, mutant_id, "exec")  # every mutant is a whole module that compiles
    return mutant.source


def line(source: str, needle: str) -> str:
    return next(text.strip() for text in source.splitlines() if needle in text)


RETURN = "return (top, {}, mask, {}, {})"
DEEP = "copy.deepcopy(scores)"
CLONE = "scores.clone()"
CE = "torch.nn.functional.cross_entropy"


@pytest.mark.parametrize(
    ("mutant_id", "needle", "expected"),
    [
        ("mean-sum:10:1", "mean =", "mean = x.sum(dim=-1, keepdim=True)"),
        ("dim:10:1", "mean =", "mean = x.mean(dim=-2, keepdim=True)"),
        ("keepdim:10:1", "mean =", "mean = x.mean(dim=-1)"),
        ("eps-moved:12:1", "return (x - mean)", "return (x - mean) / (torch.sqrt(var) + eps)"),
        ("eps-dropped:12:1", "return (x - mean)", "return (x - mean) / torch.sqrt(var)"),
        ("range:16:1", "rows =", "rows = [x[i] for i in range(n - 1)]"),
        ("slice:17:1", "return (x[", "return (x[1 + 1:n], rows, x.sum(0))"),
        ("slice:17:2", "return (x[", "return (x[1:n + 1], rows, x.sum(0))"),
        ("dim:17:1", "return (x[", "return (x[1:n], rows, x.sum(1))"),
        ("argmax-last:21:1", "top =", "top = scores.size(-1) - 1 - scores.flip(-1).argmax(-1)"),
        ("inplace:22:1", "clipped =", "clipped = scores.clamp_(max=limit)"),
        ("compare:23:1", "mask =", "mask = scores <= limit"),
        ("detach-removed:24:1", "return (top", RETURN.format("clipped", "scores.clone()", DEEP)),
        ("copy-removed:24:1", "return (top", RETURN.format("clipped.detach()", "scores", DEEP)),
        ("copy-removed:24:2", "return (top", RETURN.format("clipped.detach()", CLONE, "scores")),
        ("mean-sum:28:1", "cross_entropy", f"return {CE}(logits, target, reduction='sum')"),
        ("inplace:43:1", "weight.mul", "weight.mul_(2)"),
    ],
)  # fmt: skip
def test_each_operator_changes_exactly_its_site(found, mutant_id, needle, expected):
    assert line(changed(found, mutant_id), needle) == expected


def test_mode_and_no_grad_operators_remove_the_restoring_statement(found):
    assert "model.train(was)" not in changed(found, "mode-not-restored:36:1")
    assert "model.eval()" not in changed(found, "mode-not-restored:33:1")
    assert "m.training = flag" not in changed(found, "mode-not-restored:42:1")
    no_grad = changed(found, "no-grad-removed:34:1")
    assert "no_grad" not in no_grad and "out = model(x)" in no_grad


def test_the_float32_wrapper_is_defined_after_the_docstring_and_future_import(found):
    source = changed(found, "float32:norm")
    # (Graded in the sandbox, it fails a float64 check: test_airtight.py.)
    assert source.index("from __future__") < source.index("def _mutant_float32")
    assert "@_mutant_float32\ndef norm(" in source


def test_detach_added_and_wrappers_cover_every_top_level_function(found):
    functions = ["norm", "head", "pick", "loss", "evaluate", "restore"]
    assert {f"float32:{f}" for f in functions} <= set(found)
    assert "_mutant_detach(" in changed(found, "detach-added:pick")


def test_no_mutant_is_the_original_and_ids_are_unique():
    found = mutate.mutants(SOURCE)
    assert len({m.id for m in found}) == len(found)
    assert all(m.operator in mutate.OPERATORS for m in found)
    assert {m.operator for m in found} == set(mutate.OPERATORS)


def test_in_place_is_only_generated_on_inputs_not_temporaries():
    source = "def f(x):\n    y = x * 2\n    return y.exp(), x.exp()\n"
    inplace = [m for m in mutate.mutants(source) if m.operator == "inplace"]
    assert [line(m.source, "return") for m in inplace] == ["return (y.exp(), x.exp_())"]


def score(survived: Sequence[str], killed: Sequence[str] = ()) -> mutation.Score:
    results = {m: "passed" for m in survived} | {m: "failed" for m in killed}
    return mutation.score("ex", results, {"copy-removed:3:1": "clone of a fresh tensor"})


def test_a_new_survivor_fails_the_ratchet():
    result = score(["compare:4:1"], ["dim:2:1"])
    problems = mutation.ratchet_problems([result], set(), all_mutants={"ex": {"compare:4:1"}})
    assert problems == {
        "ex": [
            "mutant compare:4:1 survives every check: kill it with a check, or waive it in "
            "exercise.yaml if it is equivalent"
        ]
    }


def test_a_survivor_in_the_baseline_passes_and_a_waived_one_is_counted_as_waived():
    result = score(["compare:4:1", "copy-removed:3:1"], ["dim:2:1"])
    assert (len(result.killed), result.waived, result.survived) == (
        1,
        ["copy-removed:3:1"],
        ["compare:4:1"],
    )
    ids = {"ex": {"compare:4:1", "copy-removed:3:1", "dim:2:1"}}
    assert mutation.ratchet_problems([result], {("ex", "compare:4:1")}, all_mutants=ids) == {}


def test_a_stale_baseline_entry_fails_so_the_baseline_only_shrinks():
    result = score([], ["compare:4:1"])
    baseline = {("ex", "compare:4:1"), ("ex", "slice:9:1"), ("other", "dim:1:1")}
    problems = mutation.ratchet_problems([result], baseline, all_mutants={"ex": {"compare:4:1"}})
    assert problems == {
        "ex": [
            "mutants-baseline.txt lists mutant compare:4:1, which is killed or waived now: "
            "delete its line",
            "mutants-baseline.txt lists mutant slice:9:1, which is no longer generated: "
            "delete its line",
        ]
    }  # "other" was not run this time: its lines are not judged


def test_the_baseline_file_round_trips(tmp_path):
    path = tmp_path / mutation.BASELINE_NAME
    entries = {("b", "dim:2:1"), ("a", "float32:f")}
    path.write_text(mutation.format_baseline(entries))
    assert mutation.read_baseline(path) == entries


def test_waivers_need_a_known_operator_and_a_one_line_reason():
    assert jobs.mutant_waiver_problems({"dim:2:1": "dim 0 and -2 are the same for 2-D input"}) == []
    assert jobs.mutant_waiver_problems({"nope:1:1": "x", "dim:3:1": "two\nlines"}) == [
        "'nope:1:1' is not a mutant id (<operator>:<line>:<n>)",
        "dim:3:1: the reason must be one line of text",
    ]


def test_an_inert_mutant_is_neither_killed_nor_a_survivor_and_its_score_line_says_so():
    results = {"float32:f": mutation.INERT, "detach-added:f": "passed", "dim:2:1": "failed"}
    result = mutation.score("ex", results, {})
    assert (result.inert, result.survived, result.killed) == (
        ["float32:f"],
        ["detach-added:f"],
        ["dim:2:1"],
    )
    assert result.line() == (
        "ex: mutants 3 generated, 1 killed, 0 waived, 1 survived, 1 inert (never act in a check)"
        " (0 from the cache)"
    )
    # A baseline line of a mutant that turned out inert is stale: the list shrinks.
    problems = mutation.ratchet_problems(
        [result], {("ex", "float32:f"), ("ex", "detach-added:f")}, all_mutants={"ex": set(results)}
    )
    assert problems == {
        "ex": [
            "mutants-baseline.txt lists mutant float32:f, which is killed or waived now: "
            "delete its line"
        ]
    }


def test_every_wrapping_mutant_comes_with_a_probe_that_raises_where_it_would_act():
    source = "def f(x):\n    return x * 2\n"
    probes = {m.id: m.probe for m in mutate.mutants(source)}
    assert "@_mutant_probe" in probes["float32:f"]
    assert "return _mutant_detach_probe(x * 2)" in probes["detach-added:f"]
