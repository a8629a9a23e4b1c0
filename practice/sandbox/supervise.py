"""The zygote's side of one sandboxed run: pipes in, frames and capped output out, a wall clock.

The zygote creates the three pipes itself (job, output, results) and hands the child's ends to
the fork server, so it never opens a path the sandbox could have planted a symlink at. It feeds
the job, reads both pipes at once so the child can never block on a full pipe, stops keeping
output past the cap (but keeps draining it), and kills the run at its deadline.
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from practice.sandbox import frames
from practice.sandbox.cgroups import ChildCgroup, Cgroups
from practice.sandbox.forkserver import Exit, ForkServer, decode_exit

OUTPUT_CAP = 8 << 10
STARTUP_LIMIT = 120.0  # seconds a single-use process may take to import torch (and CUDA)
_KILL_GRACE = 10.0  # after SIGKILL, the fork server must report the exit within this
_MiB = 1 << 20


class SupervisorError(RuntimeError):
    """The fork server stopped answering; the zygote cannot grade safely and must restart."""


@dataclass
class Outcome:
    """Everything observed about one run; the grader turns it into a verdict."""

    frames: list[dict[str, Any]]
    malformed: str | None
    output: str
    exit: Exit | None  # None when the verdict was ready before the process was reaped
    timed_out: bool
    out_of_memory: bool
    seconds: float


@dataclass
class _Run:
    run_id: int
    job_w: int
    output_r: int
    result_r: int
    cgroup: ChildCgroup | None
    exit: Exit | None = None
    done: bool = False  # its verdict has been given; only the cleanup after its exit is left
    reader: frames.FrameReader = field(default_factory=frames.FrameReader)


class Supervisor:
    """Spawns sandboxed runs through the fork server and watches them to the end."""

    def __init__(self, server: ForkServer, cgroups: Cgroups, package_root: str) -> None:
        self.server = server
        self.cgroups = cgroups
        self.package_root = package_root
        self._ids = itertools.count(1)
        self._live: dict[int, _Run] = {}

    def spawn(self, *, mode: str, memory_mb: int) -> _Run:
        """Start a process ("fork": a copy of the warm zygote; "exec": a fresh interpreter)."""
        cgroup = None
        if self.cgroups.active:
            # The child lowers this to its usage plus memory_mb once the job arrives; until then
            # a fresh interpreter needs room to import torch (and initialise CUDA).
            startup = 4096 if mode == "exec" else 256
            cgroup = self.cgroups.create(memory_bytes=(memory_mb + startup) * _MiB, pids=64)
        job_r, job_w = os.pipe()
        output_r, output_w = os.pipe()
        result_r, result_w = os.pipe()
        run = _Run(next(self._ids), job_w, output_r, result_r, cgroup)
        try:
            self.server.spawn(
                run.run_id,
                mode=mode,
                fds=[job_r, output_w, result_w],
                cgroup_procs=cgroup.procs_files if cgroup else [],
                package_root=self.package_root,
            )
        finally:
            for fd in (job_r, output_w, result_w):
                os.close(fd)
        self._live[run.run_id] = run
        return run

    def execute(
        self, run: _Run, payload: dict[str, Any], time_limit: float, *, wait_ready: bool
    ) -> Outcome:
        """Feed ``payload`` to ``run`` and watch it until its verdict is known."""
        started = time.monotonic()
        deadline = started + (STARTUP_LIMIT if wait_ready else time_limit)
        pending = memoryview(json.dumps(payload).encode())
        os.set_blocking(run.job_w, False)
        output = bytearray()
        dropped = 0
        malformed: str | None = None
        killed_at: float | None = None
        timed_out = False
        open_pipes = {run.output_r, run.result_r}
        selector = selectors.DefaultSelector()
        selector.register(self.server.sock, selectors.EVENT_READ)
        selector.register(run.output_r, selectors.EVENT_READ)
        selector.register(run.result_r, selectors.EVENT_READ)
        selector.register(run.job_w, selectors.EVENT_WRITE)
        job_open = True
        try:
            while open_pipes or run.exit is None:
                if not open_pipes and _ended(run.reader):
                    break  # the verdict is complete; the exit is collected later
                now = time.monotonic()
                if killed_at is None and now >= deadline:
                    timed_out = True
                    killed_at = now
                    self.server.kill(run.run_id)
                if killed_at is not None and now > killed_at + _KILL_GRACE:
                    raise SupervisorError("a sandboxed process survived SIGKILL")
                timeout = (deadline if killed_at is None else killed_at + _KILL_GRACE) - now
                for key, _ in selector.select(max(timeout, 0.0)):
                    fd = key.fd
                    if fd == self.server.sock.fileno():
                        self._receive()
                    elif fd == run.job_w:
                        try:
                            pending = pending[os.write(fd, pending) :]
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(fd)
                            os.close(fd)
                            job_open = False
                    else:
                        data = os.read(fd, 1 << 16)
                        if not data:
                            selector.unregister(fd)
                            open_pipes.discard(fd)
                        elif fd == run.output_r:
                            keep = data[: max(OUTPUT_CAP - len(output), 0)]
                            output += keep
                            dropped += len(data) - len(keep)
                        elif malformed is None:
                            before = len(run.reader.frames)
                            try:
                                run.reader.feed(data)
                            except frames.Malformed as error:
                                malformed = str(error)
                                if killed_at is None:
                                    killed_at = time.monotonic()
                                    self.server.kill(run.run_id)
                            if wait_ready and before == 0 and run.reader.frames:
                                # The clock starts when the fresh interpreter is ready.
                                deadline = time.monotonic() + time_limit
                                started = time.monotonic()
        finally:
            selector.close()
            if job_open:
                os.close(run.job_w)
            for fd in (run.output_r, run.result_r):
                os.close(fd)
        seconds = time.monotonic() - started
        run.done = True
        if malformed is None and run.reader.pending and run.exit is not None:
            malformed = "a result frame cut off when the process ended"
        out_of_memory = False
        if run.exit is not None:
            out_of_memory = self._finish(run)
        text = output.decode("utf-8", "replace")
        if dropped:
            text += f"\n[output truncated: {dropped} more bytes]"
        return Outcome(
            frames=run.reader.frames,
            malformed=malformed,
            output=text,
            exit=run.exit,
            timed_out=timed_out,
            out_of_memory=out_of_memory,
            seconds=seconds,
        )

    def discard(self, run: _Run) -> None:
        """Kill a spawned run that will not be used (the zygote is shutting down)."""
        self.server.kill(run.run_id)
        for fd in (run.job_w, run.output_r, run.result_r):
            os.close(fd)

    def collect(self) -> None:
        """Handle exit reports that have already arrived, without waiting."""
        selector = selectors.DefaultSelector()
        selector.register(self.server.sock, selectors.EVENT_READ)
        try:
            while selector.select(0):
                self._receive()
        finally:
            selector.close()

    def _receive(self) -> None:
        try:
            message = self.server.receive()
        except (EOFError, OSError) as error:
            raise SupervisorError(str(error)) from error
        run = self._live.get(message["id"])
        if run is None:
            return
        run.exit = decode_exit(message["status"], message["cpu"])
        if run.done:
            self._finish(run)

    def _finish(self, run: _Run) -> bool:
        """Forget a reaped run and remove its cgroup; True if the kernel OOM-killed it."""
        self._live.pop(run.run_id, None)
        if run.cgroup is None:
            return False
        oom = run.exit is not None and run.exit.signal == signal.SIGKILL and run.cgroup.oom_killed()
        run.cgroup.remove()
        return oom


def _ended(reader: frames.FrameReader) -> bool:
    return bool(reader.frames) and reader.frames[-1].get("kind") == "end"
