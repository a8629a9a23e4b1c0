"""The fork server: a copy of the warmed-up zygote that never sees a job, only "spawn" and "kill".

Why a separate process: a forked child inherits its parent's whole memory. The zygote holds
reference solutions and their outputs; if it forked submissions itself, a submission could read
them from its own memory. The fork server is forked from the zygote once, after torch is warm and
before any job arrives, so what the children inherit is torch and nothing else.

Per spawn it creates a PID namespace whose init (pid 1) is a trusted copy of itself that only
reaps; the sandboxed process runs as pid 2, isolates itself (isolate.py) and runs the job. When
init exits, the kernel kills everything left in the namespace, so killing init (SIGKILL through a
pidfd, no pid-reuse race) is how a run is stopped, and no thread or orphan can outlive it.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Any, NoReturn

from practice.sandbox import linux, runner

_MAX_MESSAGE = 1 << 16
EXIT_SETUP_FAILED = runner.EXIT_SETUP_FAILED


def exec_argv(package_root: str) -> list[str]:
    """The command line of a single-use process (a fresh interpreter, see single_use.py)."""
    boot = (
        f"import sys; sys.path.insert(0, {package_root!r}); "
        "from practice.sandbox.single_use import main; main()"
    )
    return [sys.executable, "-E", "-s", "-c", boot]


_EXEC_ENV = {"LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class Exit:
    """How a sandboxed process ended, as its init reported it."""

    code: int | None  # the process's exit code, if it exited
    signal: int | None  # the signal that killed it (or its init), if one did
    cpu_seconds: float


def decode_exit(raw_status: int, cpu_seconds: float) -> Exit:
    if os.WIFSIGNALED(raw_status):  # init itself was killed: our timeout, or the OOM killer
        return Exit(None, os.WTERMSIG(raw_status), cpu_seconds)
    code = os.WEXITSTATUS(raw_status)
    if code >= 128:  # init encodes "the child died of signal n" as 128 + n
        return Exit(None, code - 128, cpu_seconds)
    return Exit(code, None, cpu_seconds)


class ForkServer:
    """The zygote's handle on its fork server process."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def start(cls) -> ForkServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # keep the collector from touching (and copying) every inherited page
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs)
        theirs.close()
        return cls(pid, ours)

    def spawn(
        self, run_id: int, *, mode: str, fds: list[int], cgroup_procs: list[str], package_root: str
    ) -> None:
        message = {
            "op": "spawn",
            "id": run_id,
            "mode": mode,
            "cgroup_procs": cgroup_procs,
            "package_root": package_root,
        }
        socket.send_fds(self.sock, [json.dumps(message).encode()], fds)

    def kill(self, run_id: int) -> None:
        self.sock.send(json.dumps({"op": "kill", "id": run_id}).encode())

    def receive(self) -> dict[str, Any]:
        data = self.sock.recv(_MAX_MESSAGE)
        if not data:
            raise EOFError("the fork server exited")
        return json.loads(data)


def _serve(sock: socket.socket) -> NoReturn:
    """The fork server's loop. It dies with the zygote (PDEATHSIG) and reaps every child."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        keep = sock.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 30)
        own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
        children: dict[int, tuple[int, int]] = {}  # pid -> (run id, pidfd)
        selector = selectors.DefaultSelector()
        selector.register(sock, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is sock:
                    message, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 8)
                    if not message:
                        os._exit(0)
                    _handle(json.loads(message), fds, children, selector)
                    # Back to our own namespace for children: unshare refuses a second new one
                    # while the previous is still pending.
                    linux.setns(own_pid_namespace, linux.CLONE_NEWPID)
            _reap(sock, children, selector)
    except BaseException:
        traceback.print_exc()
        os._exit(1)


def _handle(
    message: dict[str, Any],
    fds: list[int],
    children: dict[int, tuple[int, int]],
    selector: selectors.BaseSelector,
) -> None:
    if message["op"] == "kill":
        for pidfd in (fd for run_id, fd in children.values() if run_id == message["id"]):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return
    # Every fork after this unshare starts a new PID namespace, with the child as its pid 1.
    linux.unshare(linux.CLONE_NEWPID)
    pid = os.fork()
    if pid == 0:
        _init(message, fds)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    children[pid] = (message["id"], pidfd)
    selector.register(pidfd, selectors.EVENT_READ)


def _reap(
    sock: socket.socket, children: dict[int, tuple[int, int]], selector: selectors.BaseSelector
) -> None:
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None:
            return
        _, status, usage = os.wait4(info.si_pid, 0)
        entry = children.pop(info.si_pid, None)
        if entry is None:
            continue  # an orphan handed to us as subreaper: reaped, nothing to report
        run_id, pidfd = entry
        selector.unregister(pidfd)
        os.close(pidfd)
        cpu = usage.ru_utime + usage.ru_stime
        sock.send(json.dumps({"event": "exit", "id": run_id, "status": status, "cpu": cpu}).encode())


def _init(message: dict[str, Any], fds: list[int]) -> NoReturn:
    """Pid 1 of the new namespace: trusted, runs no job, reaps, and reports its child's end."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setsid()  # no controlling terminal, its own process group (TIOCSTI, group kills)
        for path in message["cgroup_procs"]:
            with open(path, "w") as f:
                f.write("0")  # "0" moves the writer; children inherit the cgroup
        linux.prctl(linux.PR_SET_DUMPABLE, 0)
        child = os.fork()
        if child == 0:
            _sandboxed(message, fds)
        os.closerange(0, 2)
        os.closerange(3, 1 << 30)
        while True:
            pid, status = os.wait()
            if pid == child:
                break
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))
        os._exit(min(os.WEXITSTATUS(status), 127))
    except BaseException:
        traceback.print_exc()
        os._exit(EXIT_SETUP_FAILED)


def _sandboxed(message: dict[str, Any], fds: list[int]) -> NoReturn:
    """Pid 2: put the pipes at fds 0-3, then run the job here or in a fresh interpreter."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        # Copies above fd 9 first, so no dup2 below can overwrite a pipe before it is moved.
        job, output, result = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds)
        os.dup2(job, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(result, runner.RESULT_FD)
        os.closerange(runner.RESULT_FD + 1, 1 << 30)
        if message["mode"] == "exec":
            argv = exec_argv(message["package_root"])
            os.execve(argv[0], argv, _EXEC_ENV)
        runner.serve(announce_ready=False)
    except BaseException:
        traceback.print_exc()
    os._exit(EXIT_SETUP_FAILED)
