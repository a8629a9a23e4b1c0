"""Trusted comparison of a submission's values with the reference's, with dtype-fitted tolerances.

Runs in the zygote, on values that passed values.unsupported(), so every type here is exact and
no method of the submission's choosing is ever called. Messages for hidden checks say what
differed (type, dtype, shape, the largest difference) but never show an expected value or one the
learner's code computed from a hidden input; visible checks also show both values, shortened.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import torch
from torch._tensor_str import printoptions

# (rtol, atol) by dtype, as documented in fixtures/bank/README.md. float64's is far below
# float32's rounding (6e-8 relative, more once it accumulates), so "computed in float32 and cast
# back" fails a float64 check (issue 23): with 1e-7 it passed any check on O(1) inputs.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (1.3e-6, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.complex128: (1e-10, 1e-12),
    torch.complex64: (1.3e-6, 1e-5),
}
FLOAT_TOLERANCE = TOLERANCES[torch.float32]
# A check's own rtol/atol never loosens a float64 (complex128) comparison past this: a tolerance
# wide enough to admit float32 rounding would make the check blind to a float32 computation.
WIDE_CEILING = 1e-9
_WIDE = (torch.float64, torch.complex128)
_F32 = struct.Struct("<f")
_REPR_LIMIT = 300


def short_repr(value: Any, limit: int = _REPR_LIMIT, *, precision: int = 4) -> str:
    """A repr of at most ``limit`` characters that never builds a longer one first.

    Values come from a sandbox: a 1 MiB string or a tensor with twenty dimensions of size 2
    (which torch prints in full, gigabytes of text) must cost no more than what is shown.
    """
    text = _bounded_repr(value, limit + 1, precision)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def expected_got(expected: Any, actual: Any) -> str:
    """ "expected ..., got ..." with tensors printed to enough digits that the two differ where
    their values do: at torch's four decimals, 7.0123e-04 and 7.0131e-04 print alike, and a
    message that shows two equal numbers under "differs" reads as a bug in the grader."""
    for precision in (4, 8, 12, 17):
        want = short_repr(expected, precision=precision)
        got = short_repr(actual, precision=precision)
        if want != got:
            break
    return f"expected {want}, got {got}"


def _bounded_repr(value: Any, budget: int, precision: int = 4) -> str:  # noqa: C901
    kind = type(value)
    if kind is str:
        return repr(value[:budget])
    if kind is torch.Tensor:
        # Summarised, torch prints at most 2 * edgeitems entries per dimension, so the printed
        # entries stay few only while the dimensions are few.
        shown = math.prod(min(n, 4) for n in value.shape)
        if shown <= 256:
            with printoptions(threshold=12, edgeitems=2, precision=precision):
                return repr(value)[:budget]
        first = value.reshape(-1)[:6].tolist()
        return f"tensor of shape {list(value.shape)}, {value.dtype}, starting {first}"[:budget]
    if kind in (list, tuple, dict):
        brackets: dict[type, tuple[str, str]] = {
            list: ("[", "]"),
            tuple: ("(", ")"),
            dict: ("{", "}"),
        }
        opening, closing = brackets[kind]
        parts: list[str] = []
        used = 2
        items = value.items() if kind is dict else value
        for item in items:
            if used > budget:
                parts.append("...")
                break
            if kind is dict:
                key, part = item
                text = _bounded_repr(key, budget - used, precision) + ": "
                text += _bounded_repr(part, budget - used - len(text), precision)
            else:
                text = _bounded_repr(item, budget - used, precision)
            parts.append(text)
            used += len(text) + 2
        if kind is tuple and len(parts) == 1:
            parts[0] += ","
        return (opening + ", ".join(parts) + closing)[:budget]
    return repr(value)[:budget]  # numbers (ints of at most 8192 bits), None, dtypes, sizes


def _type_name(value: Any) -> str:
    return "tensor" if type(value) is torch.Tensor else type(value).__name__


def difference(
    expected: Any, actual: Any, *, rtol: float | None, atol: float | None, reveal: bool
) -> str | None:
    """Why ``actual`` does not match ``expected``, or None if it does."""

    def differs(what: str) -> str:
        if reveal:
            return f"{what}: {expected_got(expected, actual)}"
        return what

    # raises(fn, ...) gives an exception's class name, or None when nothing was raised.
    if type(expected) is str and actual is None and _EXCEPTION_NAME.fullmatch(expected):
        if reveal:
            return f"expected {expected} to be raised, but nothing was raised"
        return "an exception was expected, but nothing was raised"
    if expected is None and type(actual) is str and _EXCEPTION_NAME.fullmatch(actual):
        return f"nothing should be raised, but {actual[:80]} was"
    if type(expected) is not type(actual):
        if type(actual) is str and _EXCEPTION_NAME.fullmatch(actual):
            # gen.each and raises() give the name of what the submission raised on that case.
            return f"{actual[:80]} was raised where a {_type_name(expected)} was expected"
        if type(expected) is str and _EXCEPTION_NAME.fullmatch(expected):
            if reveal:
                return f"expected {expected} to be raised, but a {_type_name(actual)} came back"
            return f"an exception was expected, but a {_type_name(actual)} came back"
        return differs(f"a {_type_name(actual)} where a {_type_name(expected)} was expected")
    if type(expected) is torch.Tensor:
        return _tensor_difference(expected, actual, rtol, atol, reveal)
    # Inside a container, a hidden check names the kind of difference only, never where it is
    # or how long the container should be (issue 24, finding 4): positions and lengths, one
    # submission at a time, recovered every value of a hidden list of booleans.
    if type(expected) in (list, tuple):
        if len(expected) != len(actual):
            if not reveal:
                return "the number of items differs"
            return differs(f"{len(actual)} items where {len(expected)} were expected")
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            problem = difference(want, got, rtol=rtol, atol=atol, reveal=reveal)
            if problem:
                return f"item {index}: {problem}" if reveal else f"an item differs: {problem}"
        return None
    if type(expected) is dict:
        if expected.keys() != actual.keys():
            return differs("the keys differ")
        for key in expected:
            problem = difference(expected[key], actual[key], rtol=rtol, atol=atol, reveal=reveal)
            if problem:
                if not reveal:
                    return f"a value differs: {problem}"
                return f"key {short_repr(key, 60)}: {problem}"
        return None
    if type(expected) is float:
        default_rtol, default_atol = float_tolerance(expected)
        r = default_rtol if rtol is None else rtol
        a = default_atol if atol is None else atol
        if not (math.isfinite(expected) and math.isfinite(actual)):
            # Infinities and NaN match only exactly, in kind and sign: a tolerance around
            # an infinity would admit every finite value (inf - x <= inf).
            if (math.isnan(expected) and math.isnan(actual)) or expected == actual:
                return None
            return differs(_non_finite(expected, actual))
        if expected == actual or abs(actual - expected) <= a + r * abs(expected):
            return None
        if reveal:
            return differs(f"the value differs by {abs(actual - expected):.3g}")
        return f"the value differs beyond the tolerance (rtol={r:g}, atol={a:g})"
    if expected != actual:
        return differs("the value differs")
    return None


def float_tolerance(expected: float) -> tuple[float, float]:
    """The default (rtol, atol) for a Python float, derived from the reference's value.

    A float carries no dtype, but the reference's value says which precision made it: a float32
    result (``.item()`` of a float32 tensor) is exactly representable in float32, a float64 one
    almost never is. So a value float32 cannot hold is compared at float64's tolerance, and
    "computed in float32 and cast back" (which can only give float32 values) fails it (issue 23);
    a value float32 holds keeps float32's. A check whose float mixes float32 results in Python
    arithmetic (a mean of ``.item()`` values) states its own rtol/atol, which then apply as given.
    """
    if not math.isfinite(expected):
        return FLOAT_TOLERANCE
    try:
        narrowed = _F32.unpack(_F32.pack(expected))[0]
    except OverflowError:  # past float32's range: only float64 holds it
        return TOLERANCES[torch.float64]
    return FLOAT_TOLERANCE if narrowed == expected else TOLERANCES[torch.float64]


def _kind(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return "a finite value"


_EXCEPTION_NAME = re.compile(r"[A-Z]\w*(Error|Exception|Warning|Interrupt|Exit)")


def _non_finite(expected: float, actual: float) -> str:
    return f"{_kind(actual)} where {_kind(expected)} was expected"


def _tensor_difference(
    expected: torch.Tensor,
    actual: torch.Tensor,
    rtol: float | None,
    atol: float | None,
    reveal: bool,
) -> str | None:
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype} where {expected.dtype} was expected"
    if expected.shape != actual.shape:
        if reveal:
            return f"shape {list(actual.shape)} where {list(expected.shape)} was expected"
        return "the shape differs from the expected one"
    tracks = _grad_difference(expected, actual)
    # Values only from here on (the flag is read above): no graph, no autograd warning.
    expected, actual = expected.detach(), actual.detach()
    r = a = 0.0
    if expected.dtype in TOLERANCES:
        default_rtol, default_atol = TOLERANCES[expected.dtype]
        r = default_rtol if rtol is None else rtol
        a = default_atol if atol is None else atol
        if expected.dtype in _WIDE:
            r, a = min(r, WIDE_CEILING), min(a, WIDE_CEILING)
        close = torch.isclose(actual, expected, rtol=r, atol=a, equal_nan=True)
    else:  # integers and bools must be equal
        close = actual == expected
    if bool(close.all()):
        return tracks
    if not reveal:
        # Hidden checks name the property that differs, never how many values or by how much:
        # counts and sizes, with NaN masking one element at a time, reconstruct the values.
        if expected.is_floating_point() or expected.is_complex():
            if bool((~torch.isfinite(actual) & torch.isfinite(expected)).any()):
                return "NaN or infinite values where finite ones were expected"
            if bool((~torch.isfinite(expected) & ~close).any()):
                return "finite or different values where NaN or infinite ones were expected"
            return f"values differ beyond the tolerance (rtol={r:g}, atol={a:g})"
        return "values differ"
    wrong = int((~close).sum())
    message = f"{wrong} of {close.numel()} values differ"
    if expected.dtype in TOLERANCES:
        message += f" beyond the tolerance (rtol={r:g}, atol={a:g})"
    if expected.is_floating_point() or expected.is_complex():
        wide = torch.complex128 if expected.is_complex() else torch.float64
        wrong_mask = ~close  # only the differing values are widened (bounded memory)
        gap = (actual[wrong_mask].to(wide) - expected[wrong_mask].to(wide)).abs()
        finite = gap[torch.isfinite(gap)]
        if finite.numel():
            message += f", by up to {float(finite.max()):.3g}"
        if finite.numel() < gap.numel():
            message += " (some are NaN or infinite where the expected values are not)"
    return message + f": {expected_got(expected, actual)}"


def _grad_difference(expected: torch.Tensor, actual: torch.Tensor) -> str | None:
    """Equal values, but one tracks gradients and the other does not (runner._export keeps the
    flag): a result detached or computed under no_grad where the reference's is differentiable,
    or the reverse (issue 23). Says nothing about any value, so hidden checks say it too."""
    if expected.requires_grad == actual.requires_grad:
        return None
    # Only what is known: which way the flag differs. Its cause (a detach, no_grad, a
    # parameter left trainable, an input that should not require grad) is the learner's to find.
    if expected.requires_grad:
        return (
            "the values match, but the result does not track gradients (requires_grad is False) "
            "where the expected result does"
        )
    return (
        "the values match, but the result tracks gradients (requires_grad is True) where the "
        "expected result does not"
    )
