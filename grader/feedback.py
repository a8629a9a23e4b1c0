"""What a failing check on generated inputs tells the learner (issue 27): the smallest generated
input on which the submission differs from the reference, what was expected and what came back,
the property that differs, and in plain words the stress family it belongs to.

Only for checks built on ``gen.each`` (generated inputs, on seed 0 for a visible example or on a
per-run seed for a hidden check): a fixed hidden check's inputs are never shown. Everything here is
decided in the trusted zygote from values already decoded and walked (values.unsupported); the
inputs come from the reference's run, never from the submission's.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch
from torch._tensor_str import printoptions

from grader import compare
from grader.gen import ORDINARY

# The family of a generated case, in the learner's words: what the input is like. A table, never a
# guess: a family missing here (a check's own, from gen.cases) is named as it is.
FAMILY_WORDS: dict[str, str] = {
    "empty": "the input is empty (a dimension of size 0)",
    "single": "every dimension of the input has size 1",
    "batch-of-one": "the batch holds a single item",
    "ordinary": "the input is ordinary random values",
    "offset": "the values are large (around 1e4) and close together",
    "overflow": "the values are large enough that exp() overflows in this dtype",
    "ties": "values are tied (small integers, a whole row equal)",
    "near-ties": "values are nearly tied (a few units in the last place apart)",
    "non-contiguous": "the input is a non-contiguous view (a transposed tensor)",
    "expanded": "the input is expanded (its rows share one row of storage, stride 0)",
    "nonfinite": "the input holds NaN or infinite values",
    "many-classes": "the last dimension is wide (257 classes)",
    "one-class": "every label is the same class",
    "edge-classes": "the labels are the first and the last class",
}
MAX_LINES = 8  # of one shown value (twice that for a case's arguments together)
MAX_ARGUMENTS = 8  # of a case's input shown
MAX_LINE = 96  # characters of one shown line
_PRECISION = {torch.float64: 10, torch.complex128: 10, torch.float32: 6, torch.complex64: 6}


# gen.each gives an exception's class name for a case that raised (as ``raises`` does).
_EXCEPTION_NAME = re.compile(r"[A-Z]\w*(Error|Exception|Warning|Interrupt|Exit)")


def _is_exception_name(value: Any) -> bool:
    return type(value) is str and _EXCEPTION_NAME.fullmatch(value) is not None


# The words of the families that speak of a tensor's dimensions or strides, for a case whose input
# holds no tensor (a dict of word counts, a string, plain numbers): only what is true of any input.
PLAIN_WORDS: dict[str, str] = {
    "empty": "the input is empty",
    "single": "the input is as small as it can be (a single item)",
    "non-contiguous": "the case family is 'non-contiguous'",
    "expanded": "the case family is 'expanded'",
}


def family_words(family: str, *, tensors: bool = True) -> str:
    """The family in plain words; ``tensors=False`` when the case's input holds no tensor."""
    if not tensors and family in PLAIN_WORDS:
        return PLAIN_WORDS[family]
    return FAMILY_WORDS.get(family, f"the case family is {family!r}")


def _holds_tensor(value: Any, depth: int = 0) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if depth > 8:
        return False
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v, depth + 1) for v in value.values())
    return False


def shown(value: Any) -> str:
    """A bounded, multi-line text of ``value`` whose indentation survives: at most MAX_LINES lines
    of at most MAX_LINE characters, cut at line ends; tensors printed with enough digits for their
    dtype to show a float32 rounding in a float64 value."""
    limit, note = MAX_LINES, None
    if type(value) is tuple and len(value) > 1:
        # Every argument, each bounded: one left out silently would make the case look like
        # another (the learner would check the call without it).
        parts = [shown(item) for item in value[:MAX_ARGUMENTS]]
        text = "\n".join(f"argument {i + 1}: {part}" for i, part in enumerate(parts))
        limit = 2 * MAX_LINES
        if len(value) > MAX_ARGUMENTS:
            note = f"({len(value) - MAX_ARGUMENTS} more arguments not shown)"
    elif type(value) is tuple and value:
        text = shown(value[0])
    elif type(value) is torch.Tensor and math.prod(min(n, 6) for n in value.shape) <= 512:
        with printoptions(
            threshold=36,
            edgeitems=3,
            precision=_PRECISION.get(value.dtype, 4),
            linewidth=MAX_LINE - 4,
        ):
            text = repr(value)[: MAX_LINES * MAX_LINE * 2]
    else:
        text = compare.short_repr(value, MAX_LINES * MAX_LINE)
    lines = text.splitlines()
    cut = [line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..." for line in lines]
    if note:  # the count of arguments left out stays, after a "..." if lines were cut too
        cut = cut[: limit - 1] if len(cut) < limit else [*cut[: limit - 2], "..."]
        cut.append(note)
    elif len(cut) > limit:
        cut = [*cut[: limit - 1], "..."]
    return "\n".join(cut)


def property_of(want: Any, got: Any) -> str:
    """Which property of one case's output differs: exception, type, dtype, shape, length, keys,
    non-finite or value (of the first part that differs, inside lists and dicts)."""
    if _is_exception_name(want) or _is_exception_name(got):
        return "exception"
    if type(want) is not type(got):
        return "type"
    if type(want) is torch.Tensor:
        if want.dtype != got.dtype:
            return "dtype"
        if want.shape != got.shape:
            return "shape"
        if want.is_floating_point() or want.is_complex():
            bad = ~torch.isfinite(got) & torch.isfinite(want)
            if bool(bad.any()):
                return "non-finite values"
        return "value"
    if type(want) in (list, tuple):
        if len(want) != len(got):
            return "length"
        for one_want, one_got in zip(want, got, strict=True):
            if compare.difference(one_want, one_got, rtol=None, atol=None, reveal=False):
                return property_of(one_want, one_got)
        return "value"
    if type(want) is dict:
        if want.keys() != got.keys():
            return "keys"
        for key in want:
            if compare.difference(want[key], got[key], rtol=None, atol=None, reveal=False):
                return property_of(want[key], got[key])
    return "value"


def narrow(
    want: Any, got: Any, *, rtol: float | None, atol: float | None, depth: int = 8
) -> tuple[str, Any, Any]:
    """The first part of one case's output that differs, and where it is ("[1]['loss']", "" for
    the whole): an output of several values (a loss and its gradients) is shown by the one that
    differs, not cut off by "..." before it."""
    path = ""
    for _ in range(depth):
        if type(want) is not type(got):
            break
        if type(want) in (list, tuple) and len(want) == len(got):
            keys: list[Any] = list(range(len(want)))
        elif type(want) is dict and want.keys() == got.keys():
            keys = list(want)
        else:
            break
        for key in keys:
            if compare.difference(want[key], got[key], rtol=rtol, atol=atol, reveal=False):
                path += f"[{compare.short_repr(key, 40)}]"
                want, got = want[key], got[key]
                break
        else:
            break
    return path, want, got


def counterexample(
    check: dict[str, Any],
    want: list[Any],
    got: list[Any],
    cases: list[tuple[str, int]],
    inputs: list[Any] | None,
    drawn: list[bool] | None = None,
) -> dict[str, Any] | None:
    """The smallest case (by size, then order) on which ``got`` differs from ``want``, both one
    output per case, an ordinary one where one differs; with the families that fail and those
    that pass. ``also_drawn``: the case used more random values than its input, drawn by the
    check itself (not shown)."""
    failing: list[int] = []
    for index, (one_want, one_got) in enumerate(zip(want, got, strict=True)):
        if compare.difference(
            one_want, one_got, rtol=check["rtol"], atol=check["atol"], reveal=False
        ):
            failing.append(index)
    if not failing:
        return None
    # Differing on an ordinary case already, the mistake shows there: an edge case (an empty
    # input, a batch of one) would only send the learner after the edge.
    ordinary = [i for i in failing if cases[i][0] == ORDINARY]
    smallest = min(ordinary or failing, key=lambda i: (cases[i][1], i))
    family, size = cases[smallest]
    one_want, one_got = want[smallest], got[smallest]
    given = None if inputs is None else inputs[smallest]
    passing = [cases[i][0] for i in range(len(cases)) if i not in failing]
    detail = compare.difference(
        one_want, one_got, rtol=check["rtol"], atol=check["atol"], reveal=False
    )
    at, one_want, one_got = narrow(one_want, one_got, rtol=check["rtol"], atol=check["atol"])
    tensors = given is None or _holds_tensor(given)
    return {
        "family": family,
        # gen's size counts a tensor's values: an input that holds no tensor (ints, a dict of
        # counts, a string) has no such count, and "0 values" would misdescribe it.
        "size": size if tensors else None,
        "where": family_words(family, tensors=tensors),
        "input": None if given is None else shown(given),
        "also_drawn": bool(drawn and drawn[smallest]),
        "at": at,
        "expected": shown(one_want),
        "got": shown(one_got),
        "property": property_of(one_want, one_got),
        "detail": detail or "",
        "failing_families": _unique(cases[i][0] for i in failing),
        "passing_families": _unique(passing),
    }


def _unique(items: Any) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def stress_summary(entries: list[dict[str, Any]]) -> str | None:
    """One sentence when every failing check failed on generated stress cases only, while the
    ordinary cases passed: which families, in the table's words. None otherwise."""
    failing = [e for e in entries if e["status"] not in ("passed", "skipped")]
    if not failing or not all("counterexample" in e for e in failing):
        return None
    families: list[str] = []
    ordinary_passed = False
    for entry in entries:
        example = entry.get("counterexample")
        if example is None:
            continue
        if ORDINARY in example["failing_families"]:
            return None
        ordinary_passed = ordinary_passed or ORDINARY in example["passing_families"]
        families += [f for f in example["failing_families"] if f not in families]
    if not ordinary_passed or not families:
        return None
    # What the inputs were, not a guess at the cause: an exact norm that small integers gave
    # exactly was once called "a tie-breaking problem", and nothing was tied.
    words = "; or when ".join(family_words(f) for f in families[:3])
    more = f" (and {len(families) - 3} more kinds of input)" if len(families) > 3 else ""
    return f"Matches on ordinary inputs; differs when {words}{more}."
