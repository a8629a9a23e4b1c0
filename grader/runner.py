"""What runs inside the sandboxed process: isolate, run the code, report raw outputs.

Nothing here decides a verdict. The process only reports, as frames on fd 3, whether the code
loaded, and for every check either the values of its ``compare`` expressions or the exception it
raised; the zygote compares them with the reference's. Submitted code runs in this same process, so
it can overwrite anything in this module, and the zygote trusts none of what arrives here except
the order of the frames written before the code ran ("isolated").
"""

from __future__ import annotations

import ast
import collections
import contextlib
import json
import linecache
import math
import os
import random
import sys
import traceback
import types
from typing import Any, NoReturn

import torch

from grader import frames, gen, traps, values
from grader.isolate import RESULT_FD, Limits, isolate

SUBMISSION_FILE = "submission.py"
MAX_MESSAGE = 2000
EXIT_SETUP_FAILED = 70


def serve(
    *,
    announce_ready: bool,
    ready: dict[str, Any] | None = None,
    namespaces_entered: bool = False,
) -> NoReturn:
    """Entry point of a sandboxed process whose fds are 0=job, 1 and 2=output, 3=results.

    ``announce_ready`` (a fresh interpreter): say so, with ``ready``'s facts about itself, before
    reading the job; the zygote trusts that frame, as only the grader's code has run so far.
    ``namespaces_entered``: isolate.enter_namespaces() ran before any thread started.
    """
    status = EXIT_SETUP_FAILED
    try:
        if announce_ready:
            frames.write(RESULT_FD, {**(ready or {}), "kind": "ready"})
        payload = json.loads(_read_all(0))
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.close(null)
        isolate(Limits(**payload["limits"]), payload["root"], namespaces_entered=namespaces_entered)
        torch.set_num_threads(1)
        frames.write(RESULT_FD, {"kind": "isolated"})
        if payload.get("forbid"):
            # Before any submitted code runs, so this frame is as trustworthy as "isolated".
            armed, handles = traps.arm(payload["forbid"], RESULT_FD)
            frames.write(RESULT_FD, {"kind": "armed", "rules": armed})
        else:
            handles = None
        status = 0
        if payload["mode"] == "snippets":
            _run_snippets(payload["blocks"])
        else:
            _run_checks(payload["code"], payload["checks"], payload["cuda"], handles)
        frames.write(RESULT_FD, {"kind": "end"})
    except BaseException:
        # Setup failures are ours (the zygote logs them); after setup, the learner sees this.
        traceback.print_exc()
    finally:
        _finish(status)


def _finish(status: int) -> NoReturn:
    # Closing the pipes before exiting lets the zygote read the verdict while the kernel is
    # still tearing down this process's address space (tens of milliseconds with torch).
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):  # the output is best effort; the exit is not
            stream.flush()
    for fd in (1, 2, RESULT_FD):
        with contextlib.suppress(OSError):
            os.close(fd)
    os._exit(status)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def describe(error: BaseException, filename: str) -> dict[str, Any]:
    """The exception as plain data: its type, a capped message, and the line in ``filename``."""
    try:
        message = str(error)
    except BaseException:
        message = "(the exception could not be printed)"
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return {"type": type(error).__name__, "message": message[:MAX_MESSAGE], "line": line}


def _load_module(source: str) -> types.ModuleType:
    module = types.ModuleType("submission")
    module.__file__ = SUBMISSION_FILE
    sys.modules["submission"] = module
    # Tracebacks printed by the learner's own code then show their source lines.
    linecache.cache[SUBMISSION_FILE] = (len(source), None, source.splitlines(True), SUBMISSION_FILE)
    exec(compile(source, SUBMISSION_FILE, "exec"), module.__dict__)  # noqa: S102 - sandboxed
    return module


class UnsupportedValue(TypeError):  # noqa: N818 - the name the learner reads
    """A compare value of a type no check can compare (the verdict shows this message as is)."""


def raises(fn: Any, *args: Any, **kwargs: Any) -> str | None:
    """Check helper: the name of the exception ``fn(*args, **kwargs)`` raises, or None."""
    try:
        fn(*args, **kwargs)
    except Exception as error:
        return type(error).__name__
    return None


def _run_checks(
    source: str, checks: list[dict[str, Any]], cuda: bool, handles: traps.Handles | None
) -> None:
    cuda = cuda and torch.cuda.is_available()
    helpers = {
        "torch": torch,
        "nn": torch.nn,
        "F": torch.nn.functional,
        "math": math,
        "raises": raises,
        "device": "cuda" if cuda else "cpu",
    }
    # Compiled, with their handles bound, before any submitted code runs.
    compiled = [_compile_check(check, helpers, handles) for check in checks]
    try:
        module = _load_module(source)
    except BaseException as error:
        frames.write(RESULT_FD, {"kind": "loaded", "error": describe(error, SUBMISSION_FILE)})
        return
    frames.write(RESULT_FD, {"kind": "loaded", "error": None})
    for index, check in enumerate(checks):
        frame: dict[str, Any] = {"kind": "check", "index": index}
        if check.get("requires") == "cuda" and not cuda:
            frame["skipped"] = True
        else:
            try:
                frame["values"], generated = _run_check(module, helpers, check, compiled[index])
                frame.update(generated)
            except BaseException as error:
                frame["error"] = describe(error, SUBMISSION_FILE)
        try:
            frames.write(RESULT_FD, frame)
        except frames.TooLarge:
            # What the check compares cannot come back: say so as this check's error, and go on
            # (the whole run ending here read as the learner's code exiting with status 0).
            frame = {"kind": "check", "index": index}
            message = f"the values it compares come to over {frames.MAX_FRAME_BYTES >> 20} MiB"
            frame["error"] = {"type": "ResultTooLarge", "message": message, "line": None}
            frames.write(RESULT_FD, frame)


_Compiled = tuple[types.CodeType, list[types.CodeType], dict[str, Any]]


def _compile_check(
    check: dict[str, Any], helpers: dict[str, Any], handles: traps.Handles | None
) -> _Compiled | BaseException:
    """A check's code and compare expressions compiled, with the handles its own references to
    forbidden functions go through (traps.Handles); or the exception compiling raised."""
    try:
        sources = [(check["code"], "<check>", "exec")]
        sources += [(expression, "<compare>", "eval") for expression in check["compare"]]
        wanted: list[tuple[str, Any]] = []
        codes = []
        for source, filename, mode in sources:
            if handles is None or not handles.needed(source):
                codes.append(compile(source, filename, mode))
                continue
            tree = handles.bind(ast.parse(source, filename, mode), helpers, wanted)
            codes.append(compile(tree, filename, mode))  # type: ignore[call-overload]
        bound = handles.make(wanted, _nested(codes)) if handles is not None else {}
        return codes[0], codes[1:], bound
    except BaseException as error:
        return error


def _nested(codes: list[types.CodeType]) -> set[types.CodeType]:
    found: set[types.CodeType] = set()
    todo = list(codes)
    while todo:
        code = todo.pop()
        found.add(code)
        todo += [const for const in code.co_consts if isinstance(const, types.CodeType)]
    return found


def _run_check(
    module: types.ModuleType,
    helpers: dict[str, Any],
    check: dict[str, Any],
    compiled: _Compiled | BaseException,
) -> tuple[list[Any], dict[str, Any]]:
    """The check's compare values, and what it generated: the (family, size) of each case it
    ran (``cases``), which compare values hold which cases (``segments``), and on a reference run
    the small cases' inputs (``inputs``, for the learner's counterexample)."""
    if isinstance(compiled, BaseException):
        raise compiled
    code, compares, bound = compiled
    namespace = dict(module.__dict__)
    namespace.update(helpers)
    namespace.update(bound)
    # The seed comes from the trusted side: 0, or one it drew for this run (`seed: per-run`).
    seed = check.get("seed", 0)
    # Its own torch.Generator: the submission cannot shift its draws.
    generator = gen.Gen(seed, keep_inputs=check.get("inputs") is True)
    namespace["gen"] = generator
    torch.manual_seed(seed)
    exec(code, namespace)  # noqa: S102 - sandboxed
    results = []
    segments: list[Any] = []
    for expression, compare in zip(check["compare"], compares, strict=True):
        raw = eval(compare, namespace)  # noqa: S307 - sandboxed
        segment = generator.segment(raw)
        segments.append(None if segment is None else list(segment))
        value = _export(raw)
        problem = values.unsupported(value)
        if problem:
            raise UnsupportedValue(f"`{expression}` is {problem}, which a check cannot compare.")
        results.append(value)
    generated: dict[str, Any] = {}
    if generator.log:
        generated["cases"] = [[family, size] for family, size in generator.log[: gen.MAX_LOGGED]]
        generated["segments"] = segments
    if generator.keep_inputs and generator.inputs:
        kept = [_export(value) for value in generator.inputs[: gen.MAX_LOGGED]]
        generated["inputs"] = [None if values.unsupported(v) else v for v in kept]
        generated["drawn"] = sorted(i for i in generator.drawn if i < gen.MAX_LOGGED)
    return results, generated


def _export(value: Any) -> Any:
    """Plain CPU copies of tensors (a view would drag its whole storage along); the rest as is."""
    kind = type(value)
    if isinstance(value, torch.Tensor):
        detached = value.detach()  # an nn.Parameter becomes a plain tensor here
        if type(detached) is not torch.Tensor or detached.layout is not torch.strided:
            return detached  # values.unsupported names the problem
        copy = detached.cpu().resolve_conj().resolve_neg().clone()
        # Whether the value tracks gradients travels with it (a leaf that requires grad):
        # the comparison holds it against the reference's, so a detached or no_grad output
        # fails where the reference's is differentiable (issue 23, `detach-added`).
        if value.requires_grad and (copy.is_floating_point() or copy.is_complex()):
            copy.requires_grad_()
        return copy
    if kind in (list, tuple):
        return kind(_export(item) for item in value)
    if kind is dict or kind in _PLAIN_MAPPINGS:
        return {key: _export(item) for key, item in value.items()}
    return value


# The standard library's own dicts, exported as plain ones: a contract that asks for a dict is met
# by any of them (hooks' records built with defaultdict(dict), an OrderedDict as state_dict()
# returns), and comparing their type failed correct solutions. Exact types only: a subclass of
# them, like any other object, still reaches values.unsupported.
_PLAIN_MAPPINGS = (collections.OrderedDict, collections.defaultdict, collections.Counter)


def _run_snippets(blocks: list[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    # Every run starts from the same random state, as the checks do: a block that draws random
    # inputs prints the same thing each time, and an unlucky draw cannot fail one run of many
    # (a sparse-tensors block compared two float32 sums with a tolerance one draw exceeded).
    torch.manual_seed(0)
    random.seed(0)
    for index, block in enumerate(blocks):
        filename = f"block-{index + 1}.py"
        linecache.cache[filename] = (len(block), None, block.splitlines(True), filename)
        frame: dict[str, Any] = {"kind": "block", "index": index, "error": None}
        try:
            exec(compile(block, filename, "exec"), namespace)  # noqa: S102 - sandboxed
        except BaseException as error:
            frame["error"] = describe(error, filename)
        frames.write(RESULT_FD, frame)
        if frame["error"]:
            return
