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

from grader import frames
from grader.cgroups import Cgroups, ChildCgroup
from grader.forkserver import Exit, ForkServer, decode_exit

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
class Run:
    """A spawned sandboxed process and the zygote's ends of its three pipes."""

    run_id: int
    job_w: int  # -1 once written and closed
    output_r: int
    result_r: int
    cgroup: ChildCgroup | None
    exit: Exit | None = None
    done: bool = False  # its verdict has been given; only the cleanup after its exit is left
    reader: frames.FrameReader = field(default_factory=frames.FrameReader)
    # What it printed while starting, read by wait_ready (the job's output begins with it).
    early_output: bytearray = field(default_factory=bytearray)
    early_dropped: int = 0


class Supervisor:
    """Spawns sandboxed runs through the fork server and watches them to the end."""

    def __init__(self, server: ForkServer, cgroups: Cgroups, package_root: str) -> None:
        self.server = server
        self.cgroups = cgroups
        self.package_root = package_root
        self._ids = itertools.count(1)
        self._live: dict[int, Run] = {}
        self._leftover: list[ChildCgroup] = []  # not yet removable (the kernel was releasing it)

    def spawn(self, *, mode: str, memory_mb: int) -> Run:
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
        run = Run(next(self._ids), job_w, output_r, result_r, cgroup)
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
        self, run: Run, payload: dict[str, Any], time_limit: float, *, wait_ready: bool
    ) -> Outcome:
        """Feed ``payload`` to ``run`` and watch it until its verdict is known.

        With ``wait_ready`` (a fresh interpreter), the clock starts at its "ready" frame.
        """
        watch = _Watch(run, payload, time_limit, wait_ready)
        # The stream is held to its order as it arrives (frames.FrameReader.expect).
        grading = payload["mode"] == "grade"
        try:
            run.reader.expect(
                "check" if grading else "block", len(payload["checks" if grading else "blocks"])
            )
        except frames.Malformed as error:
            watch.malformed = str(error)
        selector = selectors.DefaultSelector()
        selector.register(self.server.sock, selectors.EVENT_READ)
        for fd in watch.open:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(run.job_w, selectors.EVENT_WRITE)
        try:
            # Done when both pipes are closed and either the report ended (the exit is
            # collected later) or the process is known to have exited.
            while watch.open or not (_ended(run.reader) or run.exit is not None):
                now = time.monotonic()
                if watch.killed_at is None and now >= watch.deadline:
                    watch.timed_out = True
                    self._kill(watch)
                if watch.killed_at is not None and now > watch.killed_at + _KILL_GRACE:
                    raise SupervisorError("a sandboxed process survived SIGKILL")
                wake = watch.deadline if watch.killed_at is None else watch.killed_at + _KILL_GRACE
                for key, _ in selector.select(max(wake - now, 0.0)):
                    if key.fd == self.server.sock.fileno():
                        self._receive()
                    elif key.fd == run.job_w:
                        if watch.write_job():
                            selector.unregister(run.job_w)
                            os.close(run.job_w)
                            run.job_w = -1
                    elif not watch.read(key.fd):
                        selector.unregister(key.fd)
                    if watch.malformed and watch.killed_at is None:
                        self._kill(watch)
        finally:
            selector.close()
            for fd in (run.job_w, run.output_r, run.result_r):
                if fd >= 0:
                    os.close(fd)
            if run.exit is None and watch.killed_at is None:
                # The verdict is decided: nothing of the run may outlive it, even a process that
                # closed its pipes and went on (sleeping, or threads still running). Killing the
                # namespace's init makes the kernel kill everything in it.
                self.server.kill(run.run_id)
        run.done = True
        if watch.malformed is None and run.reader.pending and run.exit is not None:
            watch.malformed = "a result frame cut off when the process ended"
        return Outcome(
            frames=run.reader.frames,
            malformed=watch.malformed,
            output=watch.output_text(),
            exit=run.exit,
            timed_out=watch.timed_out,
            out_of_memory=self._finish(run) if run.exit is not None else False,
            seconds=time.monotonic() - watch.started,
        )

    def wait_ready(self, run: Run, timeout: float = STARTUP_LIMIT) -> dict[str, Any] | None:
        """Wait for a fresh interpreter's "ready" frame, before any job is written to it.

        The frame comes from a process that has run only the grader's code so far (it reads its
        job after this), so what it says of itself (whether CUDA works) can be trusted. Returns
        the frame, or None if the process died, wrote something else, or took longer than
        ``timeout``; the caller then discards the run.
        """
        if run.reader.frames:
            return run.reader.frames[0] if run.reader.frames[0].get("kind") == "ready" else None
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        selector.register(self.server.sock, selectors.EVENT_READ)
        for fd in (run.output_r, run.result_r):
            selector.register(fd, selectors.EVENT_READ)
        try:
            while not run.reader.frames and run.exit is None:
                left = deadline - time.monotonic()
                events = selector.select(left) if left > 0 else []
                if not events:
                    return None
                for key, _ in events:
                    if key.fd == self.server.sock.fileno():
                        self._receive()
                        continue
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        return None  # it closed its pipes: it is dying or dead
                    if key.fd == run.output_r:
                        keep = data[: max(OUTPUT_CAP - len(run.early_output), 0)]
                        run.early_output += keep
                        run.early_dropped += len(data) - len(keep)
                    else:
                        try:
                            run.reader.feed(data)
                        except frames.Malformed:
                            return None
        finally:
            selector.close()
        first = run.reader.frames[0] if run.reader.frames else None
        return first if first is not None and first.get("kind") == "ready" else None

    def discard(self, run: Run) -> None:
        """Give up a run that was never given a job (see wait_ready): kill its namespace; its
        exit and cgroup are collected with the others'."""
        for fd in (run.job_w, run.output_r, run.result_r):
            if fd >= 0:
                os.close(fd)
        run.job_w = run.output_r = run.result_r = -1
        run.done = True
        if run.exit is None:
            self.server.kill(run.run_id)
        else:
            self._finish(run)

    def _kill(self, watch: _Watch) -> None:
        watch.killed_at = time.monotonic()
        self.server.kill(watch.run.run_id)

    def collect(self) -> None:
        """Handle exit reports that have already arrived, without waiting."""
        selector = selectors.DefaultSelector()
        selector.register(self.server.sock, selectors.EVENT_READ)
        try:
            while selector.select(0):
                self._receive()
        finally:
            selector.close()
        self._leftover = [group for group in self._leftover if not group.remove(attempts=1)]

    def settle(self, waiting: int | None = None, timeout: float = _KILL_GRACE) -> None:
        """Wait for the exits of runs whose verdicts are out, so their cgroups go at once.

        Called between jobs, after the answer is sent, so it costs the learner nothing; it stops
        as soon as ``waiting`` (the zygote's request pipe) is readable, so the next job never
        waits for it either (that job's first step collects what is left).
        """
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        selector.register(self.server.sock, selectors.EVENT_READ)
        if waiting is not None:
            selector.register(waiting, selectors.EVENT_READ)
        try:
            while any(run.done and run.exit is None for run in self._live.values()):
                left = deadline - time.monotonic()
                ready = selector.select(left) if left > 0 else []
                if not ready or any(key.fd == waiting for key, _ in ready):
                    break
                self._receive()
        finally:
            selector.close()
        self.collect()

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

    def _finish(self, run: Run) -> bool:
        """Forget a reaped run and remove its cgroup; True if the kernel OOM-killed it."""
        self._live.pop(run.run_id, None)
        if run.cgroup is None:
            return False
        oom = run.exit is not None and run.exit.signal == signal.SIGKILL and run.cgroup.oom_killed()
        if not run.cgroup.remove():
            self._leftover.append(run.cgroup)
        return oom


class _Watch:
    """The state of one execution: the job still to write, output and frames read so far."""

    def __init__(
        self, run: Run, payload: dict[str, Any], time_limit: float, wait_ready: bool
    ) -> None:
        self.run = run
        self.time_limit = time_limit
        # A spare whose "ready" frame was read before the job (Supervisor.wait_ready) is ready.
        self.waiting_for_ready = wait_ready and not run.reader.frames
        self.started = time.monotonic()
        self.deadline = self.started + (STARTUP_LIMIT if self.waiting_for_ready else time_limit)
        self.pending = memoryview(json.dumps(payload).encode())
        os.set_blocking(run.job_w, False)
        self.open = {run.output_r, run.result_r}
        self.output = bytearray(run.early_output)
        self.dropped = run.early_dropped
        self.malformed: str | None = None
        self.killed_at: float | None = None
        self.timed_out = False

    def write_job(self) -> bool:
        """Write what the pipe takes of the job; True once it is all written (or unwanted)."""
        try:
            self.pending = self.pending[os.write(self.run.job_w, self.pending) :]
        except BrokenPipeError:
            self.pending = self.pending[:0]
        return not self.pending

    def read(self, fd: int) -> bool:
        """Read what ``fd`` has; False at its end."""
        data = os.read(fd, 1 << 16)
        if not data:
            self.open.discard(fd)
            return False
        if fd == self.run.output_r:
            # Past the cap, keep reading (a full pipe would block the child) but drop it.
            keep = data[: max(OUTPUT_CAP - len(self.output), 0)]
            self.output += keep
            self.dropped += len(data) - len(keep)
        elif self.malformed is None:
            try:
                self.run.reader.feed(data)
            except frames.Malformed as error:
                self.malformed = str(error)
            if self.waiting_for_ready and self.run.reader.frames:
                self.waiting_for_ready = False
                self.started = time.monotonic()
                self.deadline = self.started + self.time_limit
        return True

    def output_text(self) -> str:
        text = self.output.decode("utf-8", "replace")
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes]"
        return text


def _ended(reader: frames.FrameReader) -> bool:
    return bool(reader.frames) and reader.frames[-1].get("kind") == "end"
