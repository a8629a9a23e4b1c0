"""From a job, the reference's outputs and the submission's run to the result the learner sees.

The result follows the shape of Exercism's results.json: an overall status and one sentence, one
entry per check (name, status, message, visible), the captured output, plus the duration and how
many checks were skipped (they need CUDA and the grader has none).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from grader import compare, feedback, jobs, report
from grader.supervise import Outcome

UNSUPPORTED_VALUE = "UnsupportedValue"  # raised by the runner; its message names no value
SNIPPET_MEMORY_MB = 1024


@dataclass(frozen=True)
class Reference:
    """The reference solution's outputs: per check, skipped or the compare values."""

    skipped: tuple[bool, ...]
    values: tuple[list[Any] | None, ...]
    seconds: float = 0.0  # its measured run, from which the Django side fits the time limit
    # Per check, the (family, size) of each generated case the reference ran (gen.each), or None.
    cases: tuple[list[tuple[str, int]] | None, ...] = ()
    # Per check, which compare values hold which cases, and the small cases' inputs (issue 27).
    segments: tuple[list[tuple[int, int] | None] | None, ...] = ()
    inputs: tuple[list[Any] | None, ...] = ()
    # Per check, the cases whose function drew more from the check's generator than the input.
    drawn: tuple[frozenset[int], ...] = ()

    def generated(self, index: int) -> Generated | None:
        """What check ``index`` generated, as the reference ran it, or None."""
        cases = self.cases[index] if index < len(self.cases) else None
        if not cases:
            return None
        segments = self.segments[index] if index < len(self.segments) else None
        inputs = self.inputs[index] if index < len(self.inputs) else None
        drawn = self.drawn[index] if index < len(self.drawn) else frozenset()
        return Generated(cases, segments, inputs, drawn)


@dataclass(frozen=True)
class Generated:
    cases: list[tuple[str, int]]
    segments: list[tuple[int, int] | None] | None
    inputs: list[Any] | None
    drawn: frozenset[int] = frozenset()

    def of(
        self, position: int, want: Any
    ) -> tuple[list[tuple[str, int]], list[Any] | None, list[bool]] | None:
        """The cases (and kept inputs) behind compare value ``position`` when it is one output
        per case: told by the run's segments, or, for a check with one gen.each call, by
        matching the whole log."""
        if type(want) is not list:
            return None
        start, length = 0, len(self.cases)
        if self.segments is not None:
            segment = self.segments[position] if position < len(self.segments) else None
            if segment is None:
                return None
            start, length = segment
        if len(want) != length:
            return None
        inputs = None if self.inputs is None else self.inputs[start : start + length]
        drawn = [start + i in self.drawn for i in range(length)]
        return self.cases[start : start + length], inputs, drawn


def result(
    status: str,
    message: str,
    *,
    checks: list[dict[str, Any]] | None = None,
    output: str = "",
    seconds: float = 0.0,
    skipped: int = 0,
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "checks": checks or [],
        "output": output,
        "duration_ms": int(seconds * 1000),
        "skipped": skipped,
    }


def abnormal_end(
    outcome: Outcome,
    run: report.Report,
    *,
    time_limit: float,
    memory_mb: int,
    subject: str = "Your code",
) -> tuple[str, str] | None:
    """(status, sentence) when the run did not end with a complete, readable report."""
    if outcome.malformed or run.malformed:
        return "error", (
            f"{subject} wrote to the grader's result channel, so none of its results can be "
            "trusted."
        )
    if not run.isolated:
        return (
            "error",
            "The sandbox could not start; this is a problem in the grader, not your code.",
        )
    memory = f"{subject} used more than the memory limit of {memory_mb} MB."
    if outcome.out_of_memory:
        return "out_of_memory", memory
    exit = outcome.exit
    cpu_limit_hit = exit is not None and (
        exit.signal == signal.SIGXCPU
        or (exit.signal == signal.SIGKILL and exit.cpu_seconds >= time_limit)
    )
    if outcome.timed_out or cpu_limit_hit:
        return "timed_out", f"{subject} ran longer than the time limit of {time_limit:g} s."
    error = run.load_error
    if error and not error.is_memory:
        where = "" if error.line is None else f" at line {error.line}"
        return "error", f"{subject} raised {error.type}{where} while loading: {error.message}"
    if error or any(step.error and step.error.is_memory for step in run.steps):
        return "out_of_memory", memory
    if run.ended:
        return None
    if exit is not None and exit.signal is not None:
        name = signal.Signals(exit.signal).name if exit.signal in _SIGNALS else exit.signal
        crash = " (a crash in native code)" if exit.signal == signal.SIGSEGV else ""
        return "error", f"{subject}'s process was killed by {name}{crash} before it finished."
    code = "" if exit is None or exit.code is None else f" with status {exit.code}"
    return "error", f"{subject} ended the process{code} before it finished."


_SIGNALS = {s.value for s in signal.Signals}


def check_entry(
    check: dict[str, Any],
    skipped: bool,
    expected: list[Any] | None,
    step: report.Step,
    cases: list[tuple[str, int]] | Generated | None = None,
) -> dict[str, Any]:
    """One check's entry. ``cases``: what the reference generated for this check; when a
    compared list holds one output per case, the entry also names the smallest case that
    differs, by family and size (``case``), and shows it (``counterexample``: the input, what
    was expected and what came back, for generated inputs only: feedback.py)."""
    reveal = check["visible"]
    status, message = "passed", ""
    failing_case: dict[str, Any] | None = None
    example: dict[str, Any] | None = None
    generated = Generated(cases, None, None) if isinstance(cases, list) else cases
    if skipped:
        status, message = "skipped", "Needs CUDA, which this grader does not have."
    elif step.error is not None:
        status = "failed"
        if step.error.type == UNSUPPORTED_VALUE:
            message = step.error.message
        else:
            text = step.error.describe(reveal=reveal)
            message = text[0].upper() + text[1:]
    elif step.values is None or expected is None:
        status, message = "error", "Not run."
    elif step.unsupported or len(step.values) != len(expected):
        status, message = "failed", "Returned a value that a check cannot compare."
    else:
        compared = zip(check["compare"], expected, step.values, strict=True)
        for position, (expression, want, got) in enumerate(compared):
            problem = compare.difference(
                want, got, rtol=check["rtol"], atol=check["atol"], reveal=reveal
            )
            if problem:
                status = "failed"
                message = problem if check["single"] else f"`{expression}`: {problem}"
                example = _counterexample(check, position, want, got, generated)
                if example is not None:
                    failing_case = {"family": example["family"], "size": example["size"]}
                break
    entry = {"name": check["name"], "status": status, "message": message, "visible": reveal}
    if failing_case is not None:
        entry["case"] = failing_case
    if example is not None:
        entry["counterexample"] = example
    return entry


def _counterexample(
    check: dict[str, Any], position: int, want: Any, got: Any, generated: Generated | None
) -> dict[str, Any] | None:
    """The smallest generated case whose output differs, when ``want`` is a list of one output
    per case. Visible examples run on seed 0 and show everything anyway; a hidden check shows a
    case only when its inputs are generated on a per-run seed (never a fixed input)."""
    if generated is None or type(got) is not list:
        return None
    if not (check["visible"] or check.get("seed") == jobs.PER_RUN):
        return None
    found = generated.of(position, want)
    if found is None or len(got) != len(want):
        return None
    cases, inputs, drawn = found
    return feedback.counterexample(check, want, got, cases, inputs, drawn)


def grade(
    job: dict[str, Any], reference: Reference, outcome: Outcome, seconds: float
) -> dict[str, Any]:
    """The verdict on a submission's run, against the reference's outputs."""
    checks = job["checks"]
    run = report.read(outcome.frames, step_kind="check", count=len(checks))
    ending = abnormal_end(
        outcome, run, time_limit=job["time_limit"], memory_mb=job["memory_limit_mb"]
    )
    steps = [] if outcome.malformed or run.malformed else run.steps
    entries = []
    for index, check in enumerate(checks):
        if index < len(steps) or reference.skipped[index]:
            step = steps[index] if index < len(steps) else report.Step()
            generated = reference.generated(index)
            entries.append(
                check_entry(
                    check, reference.skipped[index], reference.values[index], step, generated
                )
            )
            continue
        # Never reached: the check that was running when the run ended says why.
        message = "Not run."
        if ending and index == len(steps) and run.loaded and not run.load_error:
            message = f"Stopped here: {ending[1]}"
        entries.append(
            {
                "name": check["name"],
                "status": "error",
                "message": message,
                "visible": check["visible"],
            }
        )
    skipped = sum(reference.skipped)
    common: dict[str, Any] = {
        "checks": entries,
        "output": outcome.output,
        "seconds": seconds,
        "skipped": skipped,
    }
    if ending:
        return result(*ending, **common)
    failed = [entry["name"] for entry in entries if entry["status"] not in ("passed", "skipped")]
    ran = len(checks) - skipped
    if failed:
        message = f"{len(failed)} of {ran} checks failed: {'; '.join(failed)}."
        summary = feedback.stress_summary(entries)
        return result("failed", f"{message} {summary}" if summary else message, **common)
    note = ""
    if skipped == 1:
        note = "; 1 needs CUDA and was skipped"
    elif skipped:
        note = f"; {skipped} need CUDA and were skipped"
    return result("passed", f"All {ran} checks passed{note}.", **common)


def snippets(blocks: list[str], outcome: Outcome, time_limit: float) -> dict[str, Any]:
    """The result of running an answer's code blocks in order, in one namespace."""
    run = report.read(outcome.frames, step_kind="block", count=len(blocks))
    ending = abnormal_end(outcome, run, time_limit=time_limit, memory_mb=SNIPPET_MEMORY_MB)
    steps = [] if outcome.malformed or run.malformed else run.steps
    entries = []
    failure = None
    for index in range(len(blocks)):
        status, message = "skipped", "Not run."
        if index < len(steps):
            error = steps[index].error
            status, message = "passed", ""
            if error:
                status, message = "failed", error.describe(reveal=True, where="the block")
                failure = failure or f"Block {index + 1} {message}"
        entries.append({"index": index, "status": status, "message": message})
    status, message = ending or (
        ("failed", failure) if failure else ("passed", f"All {len(blocks)} blocks ran.")
    )
    return {
        "status": status,
        "message": message,
        "blocks": entries,
        "output": outcome.output,
        "duration_ms": int(outcome.seconds * 1000),
    }
