"""The result channel: length-prefixed frames, each a torch.save of a small dict.

The child writes frames to a pipe the zygote created; the zygote decodes them with
torch.load(weights_only=True) (never plain pickle) and keeps only dicts with string keys. Whatever
the child writes, a frame that is too large, truncated or not loadable makes the whole stream
"malformed", which the grader reports as an error, never as a pass.
"""

from __future__ import annotations

import io
import os
import struct
from typing import Any

import torch

_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 16 << 20
MAX_TOTAL_BYTES = 32 << 20


def encode(frame: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(frame, buffer)
    data = buffer.getvalue()
    return _HEADER.pack(len(data)) + data


def write(fd: int, frame: dict[str, Any]) -> None:
    view = memoryview(encode(frame))
    while view:
        view = view[os.write(fd, view) :]


class Malformed(Exception):
    """The result stream broke the format: a forgery attempt, a crash mid-write, or a bug."""


class FrameReader:
    """Decodes frames incrementally as bytes arrive from the pipe."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._received = 0
        self.frames: list[dict[str, Any]] = []

    @property
    def pending(self) -> bool:
        """True if a frame was cut off (the writer died or stopped mid-frame)."""
        return bool(self._buffer)

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
            payload = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            self.frames.append(_decode(payload))


def _decode(payload: bytes) -> dict[str, Any]:
    try:
        frame = torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception as error:  # any refusal by the safe loader means the same thing
        raise Malformed("a result frame that is not a safe torch.save file") from error
    if type(frame) is not dict or not all(type(key) is str for key in frame):
        raise Malformed("a result frame that is not a plain dict")
    return frame
