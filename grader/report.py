"""Reading a run's frames: what the untrusted process claims, checked for shape and order.

The only frame the zygote relies on for its meaning is "isolated", because it is written before
the job's code runs; everything after it is data from the code under test. A frame out of order,
an unknown kind or a field of the wrong type makes the whole report malformed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from grader import values

_TYPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,99}")
_MAX_MESSAGE = 2000


class _Malformed(Exception):
    pass


@dataclass
class Error:
    type: str
    message: str
    line: int | None

    @property
    def is_memory(self) -> bool:
        # MemoryError, torch's OutOfMemoryError, numpy's _ArrayMemoryError, or torch's CPU
        # allocator failing under RLIMIT_AS (a RuntimeError).
        return self.type.endswith("MemoryError") or "can't allocate memory" in self.message

    def describe(self, *, reveal: bool, where: str = "your code") -> str:
        text = f"raised {self.type}"
        if reveal and self.message:
            text += f": {self.message}"
        if self.line is not None:
            text += f" (line {self.line} of {where})"
        return text


@dataclass
class Step:
    """One check's (or one code block's) frame."""

    skipped: bool = False
    values: list[Any] | None = None
    unsupported: str | None = None  # why ``values`` cannot be compared
    error: Error | None = None
    # (family, size) of each generated case the check ran, in order (gen.each); only the
    # reference's are read, to name the smallest case on which a submission differs.
    cases: list[tuple[str, int]] | None = None
    # Per compare value, (first case, number of cases) when it is a list gen.each returned.
    segments: list[tuple[int, int] | None] | None = None
    # A reference run's kept inputs, aligned with ``cases`` (None: too big to keep).
    inputs: list[Any] | None = None
    # A reference run's cases whose function drew more from the check's generator (their kept
    # input is not all they used), as indexes into ``cases``.
    drawn: frozenset[int] = frozenset()


@dataclass
class Report:
    isolated: bool = False
    loaded: bool = False
    load_error: Error | None = None
    steps: list[Step] = field(default_factory=list)
    ended: bool = False
    malformed: str | None = None
    armed: list[str] | None = None  # the forbid rules trapped before the code ran (traps.py)


def read(frames: list[dict[str, Any]], *, step_kind: str, count: int) -> Report:
    """Interpret ``frames`` for a run of ``count`` checks ("check") or code blocks ("block")."""
    report = Report()
    try:
        _read(frames, report, step_kind, count)
    except _Malformed as error:
        report.malformed = str(error)
    return report


def _read(frames: list[dict[str, Any]], report: Report, step_kind: str, count: int) -> None:
    queue = list(frames)
    if queue and queue[0].get("kind") == "ready":
        queue.pop(0)
    if not queue or queue[0].get("kind") != "isolated":
        if queue:
            raise _Malformed("frames before the sandbox was set up")
        return
    queue.pop(0)
    report.isolated = True
    if queue and queue[0].get("kind") == "armed":
        rules = queue.pop(0).get("rules")
        if type(rules) is not list or not all(type(rule) is str for rule in rules):
            raise _Malformed("an armed frame without its rules")
        report.armed = rules
    for frame in queue:
        if report.ended:
            raise _Malformed("a frame after the end")
        kind = frame.get("kind")
        if kind == "end":
            report.ended = True
        elif kind == "forbidden" and report.armed is not None:
            pass  # read by forbidden_calls, before anything else of the report
        elif kind == "loaded" and step_kind == "check" and not report.loaded:
            report.loaded = True
            report.load_error = _error(frame.get("error"))
        elif kind == step_kind and (report.loaded or step_kind == "block"):
            if report.load_error or frame.get("index") != len(report.steps):
                raise _Malformed("a step out of order")
            if len(report.steps) >= count:
                raise _Malformed("more steps than were asked for")
            report.steps.append(_step(frame))
        else:
            raise _Malformed(f"an unexpected frame {str(kind)[:40]!r}")
    complete = len(report.steps) == count
    if report.ended and step_kind == "check" and not report.load_error and not complete:
        raise _Malformed("an end before every check ran")


def forbidden_calls(frames: list[dict[str, Any]], rules: list[str]) -> list[tuple[str, int | None]]:
    """The forbidden calls the traps reported, each rule once with its first line.

    Read from every frame, even in a stream that later broke: a trap writes its frame the moment
    the call happens, and a frame that claims a forbidden call only ever counts against the run.
    """
    calls: dict[str, int | None] = {}
    for frame in frames:
        if frame.get("kind") != "forbidden":
            continue
        rule, line = frame.get("rule"), frame.get("line")
        if rule in rules and rule not in calls:
            calls[rule] = line if type(line) is int else None
    return list(calls.items())


def _step(frame: dict[str, Any]) -> Step:
    step = Step()
    if frame.get("skipped") is True:
        step.skipped = True
    elif "error" in frame and frame["error"] is not None:
        step.error = _error(frame["error"])
    elif "values" in frame:
        if type(frame["values"]) is not list:
            raise _Malformed("values that are not a list")
        step.values = frame["values"]
        step.unsupported = values.unsupported(step.values)
        step.cases = _cases(frame.get("cases"))
        step.segments = _segments(frame.get("segments"), len(step.values), len(step.cases or ()))
        step.inputs = _inputs(frame.get("inputs"), len(step.cases or ()))
        step.drawn = _drawn(frame.get("drawn"), len(step.cases or ()))
    elif frame.get("kind") != "block":
        raise _Malformed("a check with neither values nor an error")
    return step


_MAX_CASES = 64
_FAMILY = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


def _cases(raw: Any) -> list[tuple[str, int]] | None:
    if raw is None:
        return None
    if type(raw) is not list or len(raw) > _MAX_CASES:
        raise _Malformed("cases that are not a short list")
    cases = []
    for item in raw:
        if type(item) is not list or len(item) != 2:
            raise _Malformed("a case that is not (family, size)")
        family, size = item
        if type(family) is not str or not _FAMILY.fullmatch(family) or type(size) is not int:
            raise _Malformed("a case with a malformed family or size")
        cases.append((family, size))
    return cases


def _segments(raw: Any, compared: int, cases: int) -> list[tuple[int, int] | None] | None:
    if raw is None:
        return None
    if type(raw) is not list or len(raw) != compared:
        raise _Malformed("segments that do not match the compare values")
    segments: list[tuple[int, int] | None] = []
    for item in raw:
        if item is None:
            segments.append(None)
            continue
        if type(item) is not list or len(item) != 2 or not all(type(n) is int for n in item):
            raise _Malformed("a segment that is not (start, length)")
        start, length = item
        # Past MAX_LOGGED cases the log is cut: such a segment names no case.
        segments.append((start, length) if start >= 0 and start + length <= cases else None)
    return segments


def _drawn(raw: Any, cases: int) -> frozenset[int]:
    """Indexes of logged cases, each in range; anything else is no information (never a claim)."""
    if type(raw) is not list or len(raw) > cases:
        return frozenset()
    if not all(type(i) is int and 0 <= i < cases for i in raw):
        return frozenset()
    return frozenset(raw)


def _inputs(raw: Any, cases: int) -> list[Any] | None:
    """Kept inputs: only plain comparable values, one per logged case, else none at all."""
    if raw is None or type(raw) is not list or len(raw) != cases:
        return None
    return [None if values.unsupported(item) else item for item in raw]


def _error(raw: Any) -> Error | None:
    if raw is None:
        return None
    if type(raw) is not dict:
        raise _Malformed("an error that is not a dict")
    kind, message, line = raw.get("type"), raw.get("message"), raw.get("line")
    if type(kind) is not str or not _TYPE_NAME.fullmatch(kind):
        raise _Malformed("an error without a type name")
    if type(message) is not str or (line is not None and type(line) is not int):
        raise _Malformed("an error with malformed fields")
    return Error(kind, message[:_MAX_MESSAGE], line)
