"""The equivalence probe's transform (pure syntax-tree work): grader/probes.py.

The site's interpreter runs these tests and has no torch: a stand-in module records the probe's
torch.rand calls (the real streams are the sandbox test's, practice/tests/test_commands.py)."""

from __future__ import annotations

import random
import sys
import textwrap
import types

import numpy
import pytest

from grader import jobs, probes

SOURCE = textwrap.dedent(
    '''
    """A module docstring."""
    from __future__ import annotations

    import torch


    def scale(x, k=2):
        """Docstring stays first."""
        return x * k


    class Box:
        def __init__(self, n):
            self.n = n

        def total(self):
            def inner(v):
                return v + 1

            return inner(self.n)
    '''
)


class _Torch(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("torch")
        self.draws: list[int] = []

    def rand(self, n: int) -> list[float]:
        self.draws.append(n)
        return [0.5] * n


@pytest.fixture
def torch(monkeypatch):
    stand_in = _Torch()
    monkeypatch.setitem(sys.modules, "torch", stand_in)
    return stand_in


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<probed>", "exec"), namespace)  # noqa: S102 - our own test source
    return namespace


def test_the_probed_source_compiles_and_keeps_future_imports_and_docstrings_first(torch):
    text = probes.probed(SOURCE)
    lines = text.splitlines()
    assert "A module docstring." in lines[0]
    assert lines[1] == "from __future__ import annotations"
    namespace = _load(text)
    assert namespace["__doc__"] == "A module docstring."
    assert namespace["scale"].__doc__ == "Docstring stays first."


def test_the_probed_source_computes_what_the_original_does(torch):
    original, probed = _load(SOURCE), _load(probes.probed(SOURCE))
    assert original["scale"](3.5) == probed["scale"](3.5) == 7.0
    assert original["Box"](3).total() == probed["Box"](3).total() == 4


def test_every_function_entry_draws_from_the_global_streams(torch):
    probed = _load(probes.probed(SOURCE))
    for call, entries in (
        (lambda: probed["scale"](1.0), 1),
        (lambda: probed["Box"](3), 1),  # __init__
        (lambda: probed["Box"](3).total(), 3),  # __init__, total, inner
    ):
        torch.draws.clear()
        random.seed(0)
        numpy.random.seed(0)
        call()
        after, after_numpy = random.random(), numpy.random.rand()
        random.seed(0)
        numpy.random.seed(0)
        for _ in range(entries):
            random.random()
            numpy.random.rand(3)
        assert random.random() == after  # one draw from random per function entered
        assert numpy.random.rand() == after_numpy  # one numpy.random.rand(3)
        assert torch.draws == [7] * entries  # and one torch.rand(7)


def test_the_unprobed_source_does_not_draw(torch):
    original = _load(SOURCE)
    random.seed(0)
    original["Box"](3).total()
    after = random.random()
    random.seed(0)
    assert random.random() == after
    assert torch.draws == []


def test_a_failing_probe_names_the_failing_checks_and_a_pass_is_no_problem():
    result = {
        "status": "failed",
        "checks": [
            {"name": "drawn after the constructor", "status": "failed"},
            {"name": "fixed input", "status": "passed"},
        ],
    }
    problem = probes.problem(result)
    assert problem is not None
    assert "depend on the global random state" in problem
    assert "drawn after the constructor" in problem and "fixed input" not in problem
    assert probes.problem({"status": "passed", "checks": []}) is None


def test_rng_probe_is_a_valid_waiver_id():
    assert jobs.mutant_waiver_problems({probes.PROBE_ID: "samples from the global stream"}) == []
    assert jobs.mutant_waiver_problems({"rng-probe:1": "x"}) != []
