"""The client side of the sandbox: what Django (or the CLI) imports. Standard library only.

A pool holds one zygote per slot, each a fresh grader interpreter (exec, never a fork of the
caller, so no Django state, settings or open sockets are inherited) started with an empty
environment, no inherited file descriptors and a session of its own. Requests are JSON lines on its
stdin, answers JSON lines on its stdout. A zygote that dies, or does not answer in time, is killed
with its whole process group and replaced, and the job is tried once more on the fresh zygote; if
that fails too, the result is an error marked ``grader_failed`` (the grader's fault, never the
learner's verdict). A call never hangs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import selectors
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal

from grader import jobs, text

logger = logging.getLogger(__name__)

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# The zygote's whole environment: nothing from the caller (no DATABASE_URL, SECRET_KEY, ...).
ZYGOTE_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1"}
_GRACE = {"cpu": 30.0, "gpu": 300.0}  # a GPU run may first wait for a fresh interpreter


class SandboxError(RuntimeError):
    """A zygote could not be started (wrong interpreter, torch missing, ...)."""


class _SlotFailed(Exception):
    pass


class _InfrastructureFailure(Exception):
    """A slot failed for reasons of its own (not the job's result): try a fresh zygote."""


# A job whose zygote fails is tried this many times in all, each on a fresh zygote.
INFRASTRUCTURE_ATTEMPTS = 2
GRADER_FAILED = (
    "The grader failed while grading this (its sandbox stopped unexpectedly twice); this is a "
    "problem on our side, not in your code, and it does not count as an attempt."
)


def grader_failed_result(seconds: float = 0.0) -> dict[str, Any]:
    """The result of a job the grader itself could not run: never the learner's verdict."""
    return {**error_result(GRADER_FAILED, seconds), "grader_failed": True}


def error_result(message: str, seconds: float = 0.0) -> dict[str, Any]:
    return {
        "status": "error",
        "message": message,
        "checks": [],
        "output": "",
        "duration_ms": int(seconds * 1000),
        "skipped": 0,
    }


class _Slot:
    """One zygote process and the pipes to it; used by one thread at a time."""

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._log: IO[bytes] | None = None
        self.layers: dict[str, bool] = {}
        self.cuda = False  # whether its runs use a CUDA device (from the zygote's hello)
        self.cuda_detail = ""  # the device, or why there is none
        self.root_dir = ""  # the zygote's private temp directory, as it last reported it

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        if self._log:
            self._log.close()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - kept open as long as the zygote
        self._buffer = b""
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=PACKAGE_ROOT,
            env=ZYGOTE_ENV,
            close_fds=True,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        try:
            hello = self._read(time.monotonic() + timeout)
        except _SlotFailed as failure:
            self.kill()
            raise SandboxError(f"the grader did not start: {failure}\n{self.log_tail()}") from None
        if not hello.get("ready"):
            self.kill()
            raise SandboxError(f"the grader did not start: {hello}")
        self.layers = dict(hello.get("layers", {}))
        self.cuda = hello.get("cuda") is True
        self.cuda_detail = str(hello.get("cuda_detail", ""))
        self.note_root(hello)
        return hello

    def note_root(self, message: Mapping[str, Any]) -> None:
        root = message.get("root_dir")
        if isinstance(root, str):
            self.root_dir = root

    def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process and self.process.stdin
        deadline = time.monotonic() + timeout
        data = (json.dumps(message) + "\n").encode()
        fd = self.process.stdin.fileno()
        os.set_blocking(fd, False)
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_WRITE)
            while data:
                if not selector.select(max(deadline - time.monotonic(), 0)):
                    raise _SlotFailed("the grader stopped reading requests")
                try:
                    data = data[os.write(fd, data) :]
                except BrokenPipeError:
                    raise _SlotFailed("the grader exited") from None
        return self._read(deadline)

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.process and self.process.stdout
        fd = self.process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                if not selector.select(max(deadline - time.monotonic(), 0)):
                    raise _SlotFailed("the grader did not answer in time")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise _SlotFailed("the grader exited")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def log_tail(self, limit: int = 4000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(size - limit, 0))
        return self._log.read().decode("utf-8", "replace")

    def kill(self) -> None:
        """Kill the zygote and its fork server (one process group); their children follow."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream:
                stream.close()
        self.process = None
        # A killed zygote cannot remove its temp directory: its mount point, empty on the host.
        _remove_empty_root(self.root_dir)
        self.root_dir = ""

    def stop(self) -> None:
        """Ask the zygote to exit (end of its input), then make sure it did."""
        if self.process is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                if self.process.stdin:
                    self.process.stdin.close()
                self.process.wait(timeout=5)
            self.kill()
        if self._log:
            self._log.close()
            self._log = None


class SandboxPool:
    """Grades jobs in sandboxes, ``slots`` at a time. Thread-safe; use as a context manager.

    ``kind="cpu"``: each slot is a zygote that forks a warm, isolated child per run (~tens of ms).
    ``kind="gpu"``: each run is a fresh single-use interpreter (CUDA cannot survive a fork); with
    ``prespawn`` one is kept started ahead of the next job. Without a GPU it runs on the CPU and
    skips checks that need CUDA. ``devices="none"`` is a fake, empty device list: the same on a
    machine that has a GPU, so CI exercises everything of the GPU path but CUDA itself.
    """

    def __init__(
        self,
        python: str | os.PathLike[str],
        *,
        slots: int = 1,
        kind: Literal["cpu", "gpu"] = "cpu",
        prespawn: bool = True,
        start_timeout: float = 180.0,
        grace: float | None = None,
        devices: Literal["auto", "none"] = "auto",
    ) -> None:
        if kind not in ("cpu", "gpu") or slots < 1:
            raise ValueError("kind must be 'cpu' or 'gpu', and slots at least 1")
        if devices not in ("auto", "none"):
            raise ValueError("devices must be 'auto' or 'none'")
        self.kind = kind
        self.start_timeout = start_timeout
        # How long past the job's own limits to wait before declaring a zygote wedged.
        self.grace = _GRACE[kind] if grace is None else grace
        command = [os.fspath(python), "-E", "-s", "-m", "grader.zygote", "--kind", kind]
        command += ["--devices", devices]
        if not prespawn:
            command.append("--no-prespawn")
        self._slots = [_Slot(command) for _ in range(slots)]
        self._idle: queue.Queue[_Slot] = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        # Stops the zygotes if the pool is garbage-collected or the interpreter exits unclosed.
        self._finalizer = weakref.finalize(self, _stop_all, self._slots)
        try:
            for slot in self._slots:  # start them all, then wait: the imports run in parallel
                slot.start()
            for slot in self._slots:
                slot.wait_ready(start_timeout)
        except BaseException:
            self._closed = True
            self._finalizer()
            raise
        for slot in self._slots:
            self._idle.put(slot)

    @property
    def cuda(self) -> bool:
        """Whether this pool's runs use a CUDA device: a GPU pool whose single-use processes
        initialised CUDA and ran a matmul on it (each zygote asks one before it says ready)."""
        return all(slot.cuda for slot in self._slots)

    @property
    def cuda_detail(self) -> str:
        """The device the runs use, or why they have none (e.g. "torch 2.13.0+cpu ... is not a
        CUDA build"), as the single-use processes reported it."""
        return "; ".join(
            dict.fromkeys(slot.cuda_detail for slot in self._slots if slot.cuda_detail)
        )

    @property
    def layers(self) -> dict[str, bool]:
        """Health of the optional isolation layers: a layer is True only if every slot has it."""
        names = {name for slot in self._slots for name in slot.layers}
        return {name: all(slot.layers.get(name) for slot in self._slots) for name in names}

    def log_tail(self, limit: int = 4000) -> str:
        """The end of each zygote's own log (its stderr: why a sandbox failed to set up, what a
        single-use process said at start), for operators; never shown to learners."""
        return "\n".join(tail for slot in self._slots if (tail := slot.log_tail(limit).strip()))

    def grade(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """Grade ``job`` (see README.md for its keys) and return the result; blocks until done."""
        normalized = jobs.normalize_job(job)  # raises ValueError on a malformed job
        timeout = 2 * normalized["time_limit"] + self.grace  # the reference's run, then this one
        return self._call({"op": "grade", "job": dict(job)}, timeout)

    def run_snippets(self, blocks: Sequence[str], time_limit: float = 30.0) -> dict[str, Any]:
        """Run code blocks in order in one namespace, sandboxed; one status per block."""
        blocks, time_limit = jobs.normalize_snippets(list(blocks), time_limit)
        request = {"op": "snippets", "blocks": blocks, "time_limit": time_limit}
        return self._call(request, time_limit + self.grace)

    def _call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request`` to an idle slot. A slot that fails (its zygote died, stopped
        answering, or could not start) is an infrastructure failure, never the submission's:
        the request is tried once more on a fresh zygote, and if that fails too the result is an
        error marked ``grader_failed`` (callers must not score it). A submission's own crash is
        reported by a healthy zygote as an ordinary result and is never retried."""
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        started = time.monotonic()
        failure = ""
        for _attempt in range(INFRASTRUCTURE_ATTEMPTS):
            slot = self._idle.get()
            try:
                response = self._call_slot(slot, request, timeout)
                if response.get("recycle") is True:
                    # It grew past its memory bound and exits; the next job starts a fresh one.
                    slot.stop()
                result = response.get("result")
                if (
                    isinstance(result, dict)
                    and result.get("sandbox_failed") is True
                    and _attempt + 1 < INFRASTRUCTURE_ATTEMPTS
                ):
                    # Nothing of the job ran (its sandbox did not set itself up): a transient
                    # failure, or a zygote gone bad. Once more, on a fresh zygote.
                    failure = str(result.get("message", ""))
                    logger.error("a sandbox did not start; retrying on a fresh zygote")
                    slot.kill()
                    continue
            except _InfrastructureFailure as exc:
                failure = str(exc)
                continue
            finally:
                self._idle.put(slot)
            slot.note_root(response)
            if isinstance(response.get("layers"), dict):
                slot.layers = dict(response["layers"])
            if "invalid" in response:
                raise ValueError(response["invalid"])
            return text.clean_all(response["result"])
        logger.error("grader failed %d times; giving up: %s", INFRASTRUCTURE_ATTEMPTS, failure)
        return grader_failed_result(time.monotonic() - started)

    def _call_slot(self, slot: _Slot, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One attempt on ``slot`` (restarted first if its zygote is gone). Raises
        _InfrastructureFailure, with the slot killed so the next use starts a fresh zygote."""
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        try:
            if not slot.alive:
                if slot.process is not None:
                    logger.warning("grader zygote exited; restarting it\n%s", slot.log_tail())
                slot.kill()
                slot.start()
                slot.wait_ready(self.start_timeout)
            return slot.request(request, timeout)
        except (_SlotFailed, OSError, ValueError) as failure:
            logger.error("grader slot failed (%s); restarting it\n%s", failure, slot.log_tail())
            slot.kill()
            raise _InfrastructureFailure(str(failure)) from None
        except SandboxError as failure:
            logger.error("%s", failure)
            raise _InfrastructureFailure(str(failure)) from None

    def close(self) -> None:
        """Stop every zygote, after the jobs in flight have their verdicts."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        stopped = []
        for _ in self._slots:  # each slot once its job in flight, if any, is done
            slot = self._idle.get()
            slot.stop()
            stopped.append(slot)
        for slot in stopped:  # so that a call still waiting for a slot wakes up and refuses
            self._idle.put(slot)
        self._finalizer.detach()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _remove_empty_root(path: str) -> None:
    """Remove a zygote's temp directory and the mount point in it, only if empty (rmdir: a
    directory that is not ours, or not empty, stays as it is)."""
    if not os.path.basename(path).startswith("quizbank-zygote-"):
        return
    for directory in (os.path.join(path, "root"), path):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _stop_all(slots: list[_Slot]) -> None:
    for slot in slots:
        slot.stop()
