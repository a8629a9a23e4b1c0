"""The result channel: length-prefixed frames in a strict format of our own, decoded with bounds.

The child writes frames to a pipe the zygote created. The zygote decodes them itself, byte by
byte, with no pickle and no torch.load: a decoder that may call globals can be made to allocate
gigabytes (``bytearray(2**31)``), inflate a compressed archive past the frame cap, or spin for
minutes in a quadratic codec, all inside the trusted process that holds cached references. Here
every length is declared before the data and checked against the bytes actually received before
anything is allocated, so decoding a frame costs time and memory linear in its size (at most
MAX_FRAME_BYTES), and only these values exist:

    N None   T True   F False   i int (u16 byte count, signed big-endian)   f float (>d)
    s str (u32 byte count, UTF-8 with surrogates passed through, cleaned later)
    l list / u tuple (u32 count, items)   d dict (u32 count, key then value; keys str or int)
    z torch.Size (u8 count, >q each)      y torch.dtype (u8 length, its name)
    t tensor: u8 length + dtype name, u8 ndim, >q per dimension, then exactly numel * itemsize
      raw bytes (contiguous, native little-endian), made a tensor with torch.frombuffer
    g a floating-point or complex tensor that requires grad: as t, decoded with requires_grad set
      (the comparison holds it against the reference's: a detached result is a difference)

A frame is one dict with string keys that uses up its payload exactly. Whatever the child writes,
a frame that is too large, truncated or does not follow this format makes the whole stream
"malformed", which the grader reports as an error, never as a pass.
"""

from __future__ import annotations

import math
import os
import struct
import sys
from typing import Any

import torch

_HEADER = struct.Struct(">I")
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
MAX_FRAME_BYTES = 16 << 20
MAX_TOTAL_BYTES = 32 << 20
MAX_DEPTH = 24  # a frame dict, its values list, then values.MAX_DEPTH levels and some slack
MAX_NODES = 20_000  # values per frame (values.MAX_ITEMS is what a check may return)
MAX_INT_BYTES = 1024  # 8192 bits: its decimal form stays far below Python's 4300-digit limit
MAX_DIMS = 64
MAX_DIM_SIZE = 1 << 40
# What the decoded values of one run may cost the zygote, counted before each allocation (issue
# 24, finding 2): an 8-byte record decodes to a whole tensor object (~430 bytes), so the bytes
# received say little about the memory they become. Per value: NODE_COST, a tensor TENSOR_COST
# plus its data, a string or integer plus its length, a dict entry DICT_ENTRY_COST more.
MAX_DECODED_COST = 64 << 20
NODE_COST = 64
TENSOR_COST = 512
DICT_ENTRY_COST = 64
MAX_FORBIDDEN_FRAMES = 64
# Tensors per run: each costs the zygote microseconds to build, whatever its size.
MAX_RUN_TENSORS = 16_384

# Tensor dtypes a result may hold (those the comparison supports), by their names.
TENSOR_DTYPES: dict[str, torch.dtype] = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.complex128,
        torch.complex64,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    )
}
# Any dtype may be returned as a value (``out.dtype``); a fixed table, never getattr(torch, name).
DTYPES: dict[str, torch.dtype] = {
    str(value).removeprefix("torch."): value
    for value in vars(torch).values()
    if isinstance(value, torch.dtype)
}


class TooLarge(ValueError):
    """A frame whose encoding is over MAX_FRAME_BYTES (it is not written)."""


class Malformed(Exception):
    """The result stream broke the format: a forgery attempt, a crash mid-write, or a bug."""


# Writing (in the sandboxed process)


def encode(frame: dict[str, Any]) -> bytes:
    out = bytearray()
    _encode(frame, out)
    if len(out) > MAX_FRAME_BYTES:
        raise TooLarge(f"a result over {MAX_FRAME_BYTES >> 20} MiB")
    return _HEADER.pack(len(out)) + bytes(out)


def _name(dtype: torch.dtype) -> bytes:
    return str(dtype).removeprefix("torch.").encode()


def _encode(value: Any, out: bytearray) -> None:  # noqa: C901 - one branch per type
    kind = type(value)
    if value is None:
        out += b"N"
    elif kind is bool:
        out += b"T" if value else b"F"
    elif kind is int:
        raw = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
        if len(raw) > MAX_INT_BYTES:
            raise ValueError(f"an integer over {MAX_INT_BYTES * 8} bits")
        out += b"i" + _U16.pack(len(raw)) + raw
    elif kind is float:
        out += b"f" + _F64.pack(value)
    elif kind is str:
        raw = value.encode("utf-8", "surrogatepass")
        out += b"s" + _U32.pack(len(raw)) + raw
    elif kind in (list, tuple):
        out += (b"l" if kind is list else b"u") + _U32.pack(len(value))
        for item in value:
            _encode(item, out)
    elif kind is dict:
        out += b"d" + _U32.pack(len(value))
        for key, item in value.items():
            _encode(key, out)
            _encode(item, out)
    elif kind is torch.Size:
        out += b"z" + _U8.pack(len(value)) + b"".join(_I64.pack(n) for n in value)
    elif kind is torch.dtype:
        name = _name(value)
        out += b"y" + _U8.pack(len(name)) + name
    elif kind is torch.Tensor:
        if value.dtype not in TENSOR_DTYPES.values() or value.layout is not torch.strided:
            raise ValueError(f"a tensor of dtype {value.dtype}")
        # clone(contiguous_format), not contiguous(): a tensor whose size-1 dimension has a stride
        # other than 1 (``t[:, 0]`` of a (1, 2) tensor) counts as contiguous and would be returned
        # as is, and the byte view below then fails, taking the whole run down with it.
        tensor = value.detach().cpu().clone(memory_format=torch.contiguous_format)
        name = _name(tensor.dtype)
        out += b"g" if value.requires_grad else b"t"
        out += _U8.pack(len(name)) + name + _U8.pack(tensor.dim())
        out += b"".join(_I64.pack(n) for n in tensor.shape)
        size = tensor.numel() * tensor.element_size()
        if size:
            raw = bytearray(size)
            flat = tensor.reshape(-1).view(torch.uint8)
            torch.frombuffer(raw, dtype=torch.uint8).copy_(flat)
            out += raw
    else:
        raise ValueError(f"a {kind.__name__} cannot be sent")


def write(fd: int, frame: dict[str, Any]) -> None:
    view = memoryview(encode(frame))
    while view:
        view = view[os.write(fd, view) :]


# Reading (in the zygote)


class FrameReader:
    """Decodes frames incrementally as bytes arrive from the pipe, and refuses a stream that
    breaks its order (``expect``) the moment it does, before the next frame is decoded: one
    frame per check, in order, nothing after "end", no unknown kind. The decoded values of all
    its frames together stay under MAX_DECODED_COST."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._received = 0
        self._cost = 0
        self._tensors = 0
        self.frames: list[dict[str, Any]] = []
        self._order: _Order | None = None

    @property
    def pending(self) -> bool:
        """True if a frame was cut off (the writer died or stopped mid-frame)."""
        return bool(self._buffer)

    def expect(self, step_kind: str, count: int) -> None:
        """From now on, hold the stream to the order of a run of ``count`` checks ("check") or
        code blocks ("block"); frames already read are checked first."""
        self._order = _Order(step_kind, count)
        for frame in self.frames:
            self._order.admit(frame)

    def feed(self, data: bytes) -> None:
        self._received += len(data)
        if self._received > MAX_TOTAL_BYTES:
            raise Malformed(f"more than {MAX_TOTAL_BYTES >> 20} MiB of results")
        self._buffer += data
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME_BYTES:
                raise Malformed("a result frame over the size limit")
            end = _HEADER.size + size
            if len(self._buffer) < end:
                return
            if self._order is not None:
                self._order.before_next()
            payload = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            frame, cost, tensors = decode_costed(
                payload, MAX_DECODED_COST - self._cost, MAX_RUN_TENSORS - self._tensors
            )
            self._cost += cost
            self._tensors += tensors
            if self._order is not None:
                self._order.admit(frame)
            self.frames.append(frame)


class _Order:
    """The order a run's frames must come in (report.py reads them with the same rules):
    ["ready"], "isolated", ["armed"], then "loaded" and one "check" per check by index (or one
    "block" per block), "end" last; "forbidden" frames (a trap's report) anywhere after "armed"."""

    def __init__(self, step_kind: str, count: int) -> None:
        self.step_kind = step_kind
        self.count = count
        self.seen: list[str] = []
        self.steps = 0
        self.forbidden = 0
        self.ended = False
        self.load_failed = False

    def before_next(self) -> None:
        if self.ended:
            raise Malformed("a frame after the end")

    def admit(self, frame: dict[str, Any]) -> None:  # noqa: C901 - one branch per kind
        self.before_next()
        kind = frame.get("kind")
        seen = self.seen
        opening = (
            (kind == "ready" and not seen)
            or (kind == "isolated" and seen in ([], ["ready"]))
            or (kind == "armed" and seen[-1:] == ["isolated"])
        )
        if opening:
            pass
        elif kind == "forbidden" and "armed" in seen:
            self.forbidden += 1
            if self.forbidden > MAX_FORBIDDEN_FRAMES:
                raise Malformed("too many forbidden-call frames")
        elif "isolated" not in seen:
            raise Malformed("frames before the sandbox was set up")
        elif kind == "loaded" and self.step_kind == "check" and "loaded" not in seen:
            self.load_failed = frame.get("error") is not None
        elif kind == self.step_kind and (self.step_kind == "block" or "loaded" in seen):
            if self.load_failed or frame.get("index") != self.steps or self.steps >= self.count:
                raise Malformed("a step out of order")
            self.steps += 1
        elif kind == "end":
            self.ended = True
        else:
            raise Malformed(f"an unexpected frame {str(kind)[:40]!r}")
        if kind not in ("forbidden", self.step_kind):
            seen.append(str(kind))


def decode(payload: bytes) -> dict[str, Any]:
    """One frame's payload as a dict with string keys, or Malformed."""
    return decode_costed(payload, MAX_DECODED_COST, MAX_RUN_TENSORS)[0]


def decode_costed(payload: bytes, budget: int, tensors: int) -> tuple[dict[str, Any], int, int]:
    """One frame's payload, what its values cost and how many tensors it holds; Malformed past
    ``budget`` or ``tensors``."""
    decoder = _Decoder(payload, budget, tensors)
    try:
        frame = decoder.value(0)
    except (struct.error, UnicodeDecodeError, OverflowError, ValueError, RuntimeError) as error:
        raise Malformed(f"a result frame that does not follow the format ({error})") from None
    if decoder.at != len(payload):
        raise Malformed("a result frame with bytes after its value")
    if type(frame) is not dict or not all(type(key) is str for key in frame):
        raise Malformed("a result frame that is not a plain dict")
    return frame, decoder.cost, decoder.tensors


class _Decoder:
    def __init__(
        self, data: bytes, budget: int = MAX_DECODED_COST, tensors: int = MAX_RUN_TENSORS
    ) -> None:
        self.data = memoryview(data)  # slices are views: the payload is never copied whole
        self.at = 0
        self.nodes = 0
        self.cost = 0
        self.budget = budget
        self.tensors = 0
        self.tensor_budget = tensors

    def charge(self, cost: int) -> None:
        """Account for memory about to be allocated; Malformed past the run's budget."""
        self.cost += cost
        if self.cost > self.budget:
            raise Malformed(f"results that would take over {MAX_DECODED_COST >> 20} MiB to hold")

    def take(self, count: int) -> memoryview:
        if count < 0 or self.at + count > len(self.data):
            raise Malformed("a result frame that ends too soon")
        chunk = self.data[self.at : self.at + count]
        self.at += count
        return chunk

    def unpack(self, layout: struct.Struct) -> Any:
        return layout.unpack(self.take(layout.size))[0]

    def count(self, layout: struct.Struct) -> int:
        """A declared number of items: each takes at least a byte, so more than remain is a lie."""
        n = self.unpack(layout)
        if n > len(self.data) - self.at:
            raise Malformed("a result frame that declares more than it holds")
        return n

    def value(self, depth: int) -> Any:  # noqa: C901 - one branch per tag
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Malformed(f"a result frame with more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise Malformed(f"a result frame nested more than {MAX_DEPTH} levels deep")
        self.charge(NODE_COST)
        tag = bytes(self.take(1))
        if tag == b"N":
            return None
        if tag == b"T":
            return True
        if tag == b"F":
            return False
        if tag == b"i":
            size = self.unpack(_U16)
            if size > MAX_INT_BYTES:
                raise Malformed("an integer over the size limit")
            self.charge(size)
            return int.from_bytes(self.take(size), "big", signed=True)
        if tag == b"f":
            return self.unpack(_F64)
        if tag == b"s":
            size = self.count(_U32)
            self.charge(size)  # decoded, a str takes at most as many bytes as its UTF-8
            return str(self.take(size), "utf-8", "surrogatepass")
        if tag in (b"l", b"u"):
            items = [self.value(depth + 1) for _ in range(self.count(_U32))]
            return items if tag == b"l" else tuple(items)
        if tag == b"d":
            result: dict[Any, Any] = {}
            for _ in range(self.count(_U32)):
                self.charge(DICT_ENTRY_COST)
                key = self.value(depth + 1)
                if type(key) not in (str, int):
                    raise Malformed("a dict key that is not a str or an int")
                result[key] = self.value(depth + 1)
            return result
        if tag == b"z":
            return torch.Size(self._dims())
        if tag == b"y":
            return self._dtype(DTYPES)
        if tag == b"t":
            return self._tensor()
        if tag == b"g":
            tensor = self._tensor()
            if not (tensor.is_floating_point() or tensor.is_complex()):
                raise Malformed("an integer or bool tensor that requires grad")
            return tensor.requires_grad_()
        raise Malformed(f"an unknown tag {tag!r} in a result frame")

    def _dims(self) -> list[int]:
        ndim = self.unpack(_U8)
        if ndim > MAX_DIMS:
            raise Malformed("a shape with too many dimensions")
        dims = [self.unpack(_I64) for _ in range(ndim)]
        if not all(0 <= n <= MAX_DIM_SIZE for n in dims):
            raise Malformed("a shape with a negative or huge dimension")
        return dims

    def _dtype(self, table: dict[str, torch.dtype]) -> torch.dtype:
        name = str(self.take(self.unpack(_U8)), "ascii")
        if name not in table:
            raise Malformed(f"an unknown dtype {name[:40]!r}")
        return table[name]

    def _tensor(self) -> torch.Tensor:
        dtype = self._dtype(TENSOR_DTYPES)
        shape = self._dims()
        size = math.prod(shape) * dtype.itemsize  # exact: checked before allocating
        if size > len(self.data) - self.at:
            raise Malformed("a tensor larger than its frame")
        self.charge(TENSOR_COST + size * (2 if dtype is torch.bool else 1))
        self.tensors += 1
        if self.tensors > self.tensor_budget:
            raise Malformed(f"results with more than {MAX_RUN_TENSORS} tensors")
        if size == 0:
            return torch.empty(shape, dtype=dtype)
        raw = bytearray(self.take(size))
        if sys.byteorder != "little":  # pragma: no cover - both sides are this machine
            raise Malformed("a big-endian host")
        if dtype is torch.bool:  # any byte but 0 or 1 would make an invalid bool
            return torch.frombuffer(raw, dtype=torch.uint8).reshape(shape) != 0
        return torch.frombuffer(raw, dtype=dtype).reshape(shape)
