"""Generated stress inputs for check code: ``gen`` in every check's namespace (issue 23).

A check draws its inputs from a declared domain instead of one hand-picked case, and every domain
always yields the stress families that wrong code trips on:

    cases = gen.floats((4, 7), dtype=torch.float64)       # every float family, small first
    outs = gen.each(cases, lambda x: my_softmax(x, dim=-1))
    # compare: outs

Why a seeded generator written here and not Hypothesis' strategies: the reference and the
submission run in two separate sandboxed processes and must see the very same inputs, and the
verdict is decided outside both (DESIGN.md). Hypothesis draws examples inside a test loop that
runs the code under test, decides pass or fail in the same process and shrinks by re-running it:
exactly what the sandbox must not do, and its ``.example()`` is documented as non-reproducible.
What is kept from it is the idea: declared domains, families of edge cases always included, and
a smallest-first order, so the first case that differs is the smallest one (the "shrunk"
example, found without re-running anything).

Every draw comes from a ``torch.Generator`` seeded with the check's seed (0, or the per-run seed
the zygote drew), created before the check's code runs: nothing the submission does with the
global RNG shifts the inputs. ``gen.each`` records each case's family and size; the runner sends
them with the check's values, and the trusted side names the smallest failing case's family.
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

# Families, in the order they are listed within one size.
ORDINARY = "ordinary"
FLOAT_FAMILIES = (
    "empty",  # a size-0 batch
    "single",  # every dimension of size 1
    "batch-of-one",  # the first dimension of size 1
    "ordinary",  # randn
    "offset",  # 1e4 + randn: a large offset with small gaps (E[x^2] - E[x]^2 cancels)
    "overflow",  # magnitudes past exp()'s overflow for the dtype (softmax, logsumexp)
    "ties",  # small integers: exact ties, whole rows equal
    "near-ties",  # ties plus a few ulps: argmax/top-k decided by rounding
    "non-contiguous",  # a transposed view
    "expanded",  # stride 0 along the first dimension (all rows alias one storage row)
)
NONFINITE = "nonfinite"  # NaN, +inf and -inf, only where the contract defines them
MANY_CLASSES = "many-classes"  # the last dimension widened to MANY_CLASSES_SIZE
MANY_CLASSES_SIZE = 257
MAX_LOGGED = 64  # cases whose family and size a check reports
# Inputs a reference run keeps for the learner's counterexample (issue 27): small cases only, so
# the frame stays small; a bigger first failing case is named by family and size alone.
MAX_KEPT_NUMEL = 1024  # elements of one case's input
MAX_KEPT_TOTAL = 8192  # elements kept per check


class AllCasesRaised(Exception):
    """A ``gen.each`` list on which the reference raised on every case (see ``Gen.each``)."""


@dataclass(frozen=True)
class Case:
    family: str
    size: int  # numel of the value (of its first tensor, for tuples)
    value: Any


class Gen:
    """One check's generator: a seeded torch.Generator and the log of the cases it ran."""

    def __init__(self, seed: int, *, keep_inputs: bool = False) -> None:
        self.seed = seed
        self.rng = torch.Generator().manual_seed(seed)
        self.log: list[tuple[str, int]] = []
        # keep_inputs (reference runs only): a copy of each case's input, taken before ``fn``
        # sees it, aligned with ``log`` (None where it is too big to keep).
        self.keep_inputs = keep_inputs
        self.inputs: list[Any] = []
        self._kept = 0
        # Indexes (in ``log``) of the cases whose ``fn`` drew from this generator itself (a
        # warm-up batch, a target, a model built under ``seeded()``): their kept input is not
        # all the case used, and the learner is told so (reference runs only).
        self.drawn: set[int] = set()
        # id of each list ``each`` returned -> (its first case's index in ``log``, the list):
        # which compare value holds which cases, told exactly rather than guessed from lengths.
        self._outputs: dict[int, tuple[int, list[Any]]] = {}

    # --- primitives, all on this check's own generator -----------------------------------

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(shape, generator=self.rng, dtype=dtype)

    def randint(self, low: int, high: int, *shape: int) -> torch.Tensor:
        return torch.randint(low, high, shape, generator=self.rng)

    def rand(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.rand(shape, generator=self.rng, dtype=dtype)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[int(torch.randint(0, len(options), (), generator=self.rng))]

    # --- domains ---------------------------------------------------------------------------

    def floats(
        self,
        shape: Sequence[int],
        *,
        dtype: torch.dtype = torch.float32,
        families: Iterable[str] | None = None,
        nonfinite: bool = False,
        many_classes: bool = False,
        device: str = "cpu",
    ) -> list[Case]:
        """Floating tensors of ``shape`` (or its edge sizes) in every family, small first.

        ``nonfinite``: add NaN/inf inputs (only where the contract says what they give);
        ``many_classes``: add a case whose last dimension is MANY_CLASSES_SIZE wide."""
        shape = tuple(int(n) for n in shape)
        chosen = list(FLOAT_FAMILIES if families is None else families)
        if nonfinite and NONFINITE not in chosen:
            chosen.append(NONFINITE)
        if many_classes and MANY_CLASSES not in chosen:
            chosen.append(MANY_CLASSES)
        cases = [self._float_case(family, shape, dtype) for family in chosen]
        ordered = _small_first(cases, chosen)
        if device != "cpu":
            ordered = [Case(c.family, c.size, c.value.to(device)) for c in ordered]
        return ordered

    def labels(
        self,
        batch: int,
        classes: int,
        *,
        families: Iterable[str] | None = None,
    ) -> list[Case]:
        """Integer class indices in [0, classes): ordinary, all one class, the edge classes,
        a batch of 0 and of 1, small first."""
        chosen = list(families or ("empty", "single", "ordinary", "one-class", "edge-classes"))
        made: list[Case] = []
        for family in chosen:
            if family == "empty":
                value = torch.zeros(0, dtype=torch.long)
            elif family == "single":
                value = self.randint(0, classes, 1)
            elif family == "one-class":
                value = torch.full((batch,), int(self.randint(0, classes)), dtype=torch.long)
            elif family == "edge-classes":
                value = torch.tensor([0, classes - 1] * (batch // 2 + 1))[:batch]
            elif family == "ordinary":
                value = self.randint(0, classes, batch)
            else:
                raise ValueError(f"unknown label family {family!r}")
            made.append(Case(family, value.numel(), value))
        return _small_first(made, chosen)

    def cases(self, make: Callable[[str, Gen], Any], families: Iterable[str]) -> list[Case]:
        """A domain of the check's own: ``make(family, gen)`` builds one value per family."""
        chosen = list(families)
        made = []
        for family in chosen:
            value = make(family, self)
            made.append(Case(family, _size(value), value))
        return _small_first(made, chosen)

    # --- running them ----------------------------------------------------------------------

    def each(
        self, cases: Iterable[Case], fn: Callable[..., Any], *, expect_raises: bool = False
    ) -> list[Any]:
        """``fn(case.value)`` for every case (a tuple value is spread as arguments); a case on
        which ``fn`` raises gives the exception's class name, like ``raises``. The family and
        size of each case are recorded, in order, for the verdict.

        On the reference's run (the only one that keeps inputs), a list on which the reference
        raised on every case, or on its ``ordinary`` case (plain randn of the declared shape: a
        domain whose ordinary member is invalid is declared wrong), is a bug in the bank: the
        check would compare exception names and little else. It raises ``AllCasesRaised``
        there, so the check errors in the reference and ``verify_bank`` reports it; a check of
        the errors themselves (every case invalid by design) says so with
        ``expect_raises=True``."""
        out: list[Any] = []
        self._outputs[id(out)] = (len(self.log), out)
        raised: list[tuple[str, BaseException]] = []
        for case in cases:
            self.log.append((case.family, case.size))
            if self.keep_inputs:
                self.inputs.append(self._keep(case))
            args = case.value if type(case.value) is tuple else (case.value,)
            # What ``fn`` draws (gen.grads' upstream gradients, a warm-up batch) comes from a
            # stream of the case's own, seeded from the check's: code that raises before a draw,
            # or draws more, cannot shift the later cases' values away from the reference's
            # (their differences would be the stream's, not the code's).
            case_seed = int(torch.randint(0, 2**62, (), generator=self.rng))
            resume = self.rng.get_state()
            self.rng.manual_seed(case_seed)
            start = self.rng.get_state() if self.keep_inputs else None
            try:
                out.append(fn(*args))
            except Exception as error:
                out.append(type(error).__name__)
                raised.append((case.family, error))
            finally:
                if start is not None and not torch.equal(start, self.rng.get_state()):
                    self.drawn.add(len(self.log) - 1)
                self.rng.set_state(resume)
        if self.keep_inputs and raised and not expect_raises:
            family, first = raised[0]
            where = (
                f"all {len(out)} generated cases"
                if len(raised) == len(out)
                else "the ordinary case"
                if ORDINARY in (f for f, _ in raised)
                else None
            )
            if where:
                raise AllCasesRaised(
                    f"the reference raised on {where} of gen.each ({family}: "
                    f"{type(first).__name__}: {str(first)[:200]}); draw cases the contract "
                    "accepts, or pass expect_raises=True to a check of the errors"
                )
        return out

    def segment(self, value: Any) -> tuple[int, int] | None:
        """(first case's index, number of cases) when ``value`` is a list ``each`` returned."""
        found = self._outputs.get(id(value))
        if found is None or found[1] is not value:
            return None
        return found[0], len(value)

    def _keep(self, case: Case) -> Any:
        values = case.value if type(case.value) is tuple else (case.value,)
        numel = sum(v.numel() for v in values if isinstance(v, torch.Tensor))
        if numel > MAX_KEPT_NUMEL or self._kept + numel > MAX_KEPT_TOTAL:
            return None
        self._kept += numel
        copied = tuple(v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values)
        return copied if type(case.value) is tuple else copied[0]

    def _float_case(self, family: str, shape: tuple[int, ...], dtype: torch.dtype) -> Case:
        value = _float_case_value(self, family, shape, dtype)
        return Case(family, value.numel(), value)

    # --- gradients -------------------------------------------------------------------------

    def grads(
        self,
        fn: Callable[..., Any],
        *args: Any,
        params: Iterable[torch.Tensor] | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """``[out, input grads, parameter grads]`` of ``fn(*args, **kwargs)``: compare it to test
        that the submission's output is differentiable, and correctly so, not only its values.

        Every floating-point tensor argument (also inside a list or tuple) is replaced by a copy
        that requires grad; the parameters are ``params``, or those (requiring grad) of ``fn``
        when it is a module or a module's method and of every module argument. The output's
        floating tensors are projected on seeded random weights (one ``randn`` per output, drawn
        after the call) and differentiated with ``torch.autograd.grad``, so nothing accumulates
        into ``.grad``. A gradient that does not flow is None; an output that tracks no gradient
        at all (detached, computed under no_grad) gives None for every gradient, and the
        comparison names its ``requires_grad`` too (issue 23, `detach-added`)."""
        inputs: list[torch.Tensor] = []

        def leaf(value: Any) -> Any:
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                copy = value.detach().clone().requires_grad_()
                inputs.append(copy)
                return copy
            if type(value) in (tuple, list):
                return type(value)(leaf(item) for item in value)
            return value

        args = tuple(leaf(a) for a in args)
        kwargs = {k: leaf(v) for k, v in kwargs.items()}
        if params is None:
            owners = [fn, getattr(fn, "__self__", None), *args, *kwargs.values()]
            seen: dict[int, torch.Tensor] = {}
            for owner in owners:
                if isinstance(owner, torch.nn.Module):
                    for p in owner.parameters():
                        if p.requires_grad:
                            seen.setdefault(id(p), p)
            params = list(seen.values())
        weights = list(params)
        with torch.enable_grad():
            out = fn(*args, **kwargs)
            tracked = [t for t in _tensors(out) if t.is_floating_point() and t.requires_grad]
            leaves = inputs + weights
            if not tracked or not leaves:
                found: list[Any] = [None] * len(leaves)
            else:
                total = sum(
                    (t * torch.randn(t.shape, generator=self.rng, dtype=t.dtype).to(t.device)).sum()
                    for t in tracked
                )
                found = list(torch.autograd.grad(total, leaves, allow_unused=True))
        return [out, found[: len(inputs)], found[len(inputs) :]]

    # --- modules and state -----------------------------------------------------------------

    def mixed_modes(self, model: torch.nn.Module) -> list[bool]:
        """Put every submodule of ``model`` in a seeded mix of train and eval modes (the root
        too, never all alike when there are two or more), and return the modes in
        ``model.modules()`` order: compare them after the call to catch a function that
        restores one flag for the whole tree (``model.train(flag)``)."""
        modules = list(model.modules())
        flags = [bool(int(self.randint(0, 2))) for _ in modules]
        if len(flags) > 1 and len(set(flags)) == 1:
            flags[-1] = not flags[-1]
        for module, flag in zip(modules, flags, strict=True):
            module.training = flag
        return flags

    @staticmethod
    def modes(model: torch.nn.Module) -> list[bool]:
        return [m.training for m in model.modules()]

    @staticmethod
    def subclass(cls: type) -> type:
        """A trivial subclass of ``cls``: code that tests ``type(m) in (...)`` misses it."""
        return type(f"My{cls.__name__}", (cls,), {})

    @contextlib.contextmanager
    def seeded(self) -> Iterator[None]:
        """Torch's, Python's (and numpy's, where imported) global random streams seeded from
        this check's generator inside the block, and put back as they were after it. Build what
        draws from the global stream (``nn.Linear(4, 3)``'s initial weights, ``nn.init``, a
        ``DataLoader``'s shuffle order) inside it: the values then depend on the check's seed
        alone, not on how many numbers the learner's code drew before (the rng-probe). Call the
        learner's code outside it."""
        seed = int(torch.randint(0, 2**31, (), generator=self.rng))
        numpy = sys.modules.get("numpy")  # seeded too where something imported it
        state = random.getstate(), numpy.random.get_state() if numpy else None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            random.seed(seed)
            if numpy:
                numpy.random.seed(seed)
            try:
                yield
            finally:
                random.setstate(state[0])
                if numpy:
                    numpy.random.set_state(state[1])

    def aliased(self, n: int, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
        """Two tensors that share storage: ``a`` and a view ``b`` of its second half."""
        a = self.randn(2 * n, dtype=dtype)
        return a, a[n:]


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if type(value) in (tuple, list):
        return [t for item in value for t in _tensors(item)]
    if type(value) is dict:
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _size(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    if type(value) in (tuple, list) and value:
        return _size(value[0])
    return 0


def _small_first(cases: list[Case], order: list[str]) -> list[Case]:
    rank = {family: index for index, family in enumerate(order)}
    return sorted(cases, key=lambda c: (c.size, rank.get(c.family, len(rank))))


def _overflow_scale(dtype: torch.dtype) -> float:
    # 1.5 x the largest x with finite exp(x): past it for float32 (88.7) and float64 (709.8).
    return 1.5 * math.log(torch.finfo(dtype).max)


def _float_case_value(  # noqa: C901 - one branch per family
    gen: Gen, family: str, shape: tuple[int, ...], dtype: torch.dtype
) -> torch.Tensor:
    randn = gen.randn
    if family == "empty":
        return randn(0, *shape[1:], dtype=dtype)
    if family == "single":
        return randn(*([1] * len(shape)), dtype=dtype)
    if family == "batch-of-one":
        return randn(1, *shape[1:], dtype=dtype)
    if family == "ordinary":
        return randn(*shape, dtype=dtype)
    if family == "offset":
        return randn(*shape, dtype=dtype) + 1e4
    if family == "overflow":
        return randn(*shape, dtype=dtype) * _overflow_scale(dtype)
    if family == "ties":
        value = gen.randint(-2, 3, *shape).to(dtype)
        if value.ndim and value.shape[0]:
            value[0] = 1.0  # one whole row of equal values
        return value
    if family == "near-ties":
        ties = gen.randint(-2, 3, *shape).to(dtype)
        eps = torch.finfo(dtype).eps
        return ties * (1 + 4 * eps * gen.randint(-2, 3, *shape).to(dtype))
    if family == "non-contiguous":
        if len(shape) >= 2:
            return randn(*shape[:-2], shape[-1], shape[-2], dtype=dtype).transpose(-1, -2)
        return randn(2 * shape[0] if shape else 2, dtype=dtype)[::2]
    if family == "expanded":
        if not shape:
            return randn(dtype=dtype)
        return randn(1, *shape[1:], dtype=dtype).expand(*shape)
    if family == NONFINITE:
        value = randn(*shape, dtype=dtype)
        flat = value.view(-1)
        for index, special in zip((0, 2, 4), (math.nan, math.inf, -math.inf), strict=True):
            if index < flat.numel():
                flat[index] = special
        return value
    if family == MANY_CLASSES:
        return randn(*shape[:-1], MANY_CLASSES_SIZE, dtype=dtype) * 3
    raise ValueError(f"unknown float family {family!r}")
