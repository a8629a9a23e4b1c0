"""The values a check may compare, and the strict walk that admits nothing else.

The zygote runs this walk on everything that comes back from a sandboxed process, after the
frame decoder (frames.py) has already refused anything but these types: only exact types pass, so a
tensor subclass, an object whose __eq__ says yes to everything, or a dict subclass never reaches
the comparison. The runner in the child runs the same walk to give the learner a clear message.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.frames import MAX_INT_BYTES, TENSOR_DTYPES

MAX_DEPTH = 16
MAX_ITEMS = 10_000

_SCALARS = (int, float, bool, str, type(None), torch.dtype)


def unsupported(value: Any) -> str | None:
    """Describe the first part of ``value`` that is not a comparable value, or return None."""
    budget = [MAX_ITEMS]

    def walk(item: Any, depth: int) -> str | None:
        budget[0] -= 1
        if budget[0] < 0:
            return f"it has more than {MAX_ITEMS} parts"
        if depth > MAX_DEPTH:
            return f"it is nested more than {MAX_DEPTH} levels deep"
        kind = type(item)
        if kind is int and item.bit_length() >= MAX_INT_BYTES * 8:
            return f"an integer over {MAX_INT_BYTES * 8} bits"
        if kind in _SCALARS:
            return None
        if kind is torch.Tensor:
            if item.layout is not torch.strided:
                return f"a {item.layout} tensor (convert it with .to_dense())"
            if item.device.type != "cpu" or item.is_quantized:
                return "a tensor that is not a plain dense tensor"
            if item.dtype not in TENSOR_DTYPES.values():
                return f"a tensor of dtype {item.dtype}"
            return None
        if kind is torch.Size:
            return None if all(type(n) is int for n in item) else "a malformed torch.Size"
        if kind in (list, tuple):
            for part in item:
                problem = walk(part, depth + 1)
                if problem:
                    return problem
            return None
        if kind is dict:
            for key, part in item.items():
                if type(key) not in (str, int):
                    return f"a dict key of type {type(key).__name__}"
                problem = walk(part, depth + 1)
                if problem:
                    return problem
            return None
        if isinstance(item, torch.Tensor):
            return f"a {kind.__name__} (a tensor subclass; return a plain torch.Tensor)"
        return f"a {kind.__module__}.{kind.__qualname__}"

    return walk(value, 0)
