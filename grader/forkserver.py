"""The fork server: a copy of the warmed-up zygote that never sees a job, only "spawn" and "kill".

Why a separate process: a forked child inherits its parent's whole memory. The zygote holds
reference solutions and their outputs; if it forked submissions itself, a submission could read
them from its own memory. The fork server is forked from the zygote once, after torch is warm and
before any job arrives, so what the children inherit is torch and nothing else.

Per spawn it gets a new PID namespace from the init spawner (pidns.py) and forks the sandboxed
process into it as pid 2; that process isolates itself (isolate.py) and runs the job. Killing the
namespace's init makes the kernel kill everything left in the namespace, so that is how a run is
stopped (SIGKILL through pidfds: no pid-reuse race), and no thread or orphan outlives a run.
"""

from __future__ import annotations

import contextlib
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

from grader import linux, runner
from grader.pidns import InitSpawner

_MAX_MESSAGE = 1 << 16
EXIT_SETUP_FAILED = runner.EXIT_SETUP_FAILED


def exec_argv(package_root: str) -> list[str]:
    """The command line of a single-use process (a fresh interpreter, see single_use.py)."""
    boot = (
        f"import sys; sys.path.insert(0, {package_root!r}); "
        "from grader.single_use import main; main()"
    )
    return [sys.executable, "-E", "-s", "-c", boot]


_EXEC_ENV = {"LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def hide_cuda() -> None:
    """Single-use processes see no CUDA device (the fake, empty device list). Call before
    ForkServer.start: the fork server is a fork of the caller and keeps this environment."""
    _EXEC_ENV["CUDA_VISIBLE_DEVICES"] = ""


@dataclass
class Exit:
    """How a sandboxed process ended."""

    code: int | None  # its exit code, if it exited
    signal: int | None  # the signal that killed it, if one did
    cpu_seconds: float


def decode_exit(raw_status: int, cpu_seconds: float) -> Exit:
    if os.WIFSIGNALED(raw_status):
        return Exit(None, os.WTERMSIG(raw_status), cpu_seconds)
    return Exit(os.WEXITSTATUS(raw_status), None, cpu_seconds)


class ForkServer:
    """The zygote's handle on its fork server process."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def start(cls, inits: InitSpawner) -> ForkServer:
        """Fork the fork server; from then on only it talks to ``inits``."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # keep the collector from touching (and copying) every inherited page
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs, inits)
        theirs.close()
        inits.sock.close()
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


_Children = dict[int, tuple[int, int, int]]  # pid -> (run id, its pidfd, its init's pidfd)


def _serve(sock: socket.socket, inits: InitSpawner) -> NoReturn:
    """The fork server's loop. It dies with the zygote (PDEATHSIG) and reaps every child."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        linux.close_fds_except(sock.fileno(), inits.sock.fileno())
        own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
        children: _Children = {}
        selector = selectors.DefaultSelector()
        selector.register(sock, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is sock:
                    message, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 8)
                    if not message:
                        os._exit(0)
                    request = json.loads(message)
                    if request["op"] == "kill":
                        _kill(request["id"], children)
                    else:
                        _spawn(request, fds, children, selector, inits, own_pid_namespace)
            _reap(sock, children, selector)
    except BaseException:
        traceback.print_exc()
        os._exit(1)


def _signal(pidfd: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has exited already
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)


def _kill(run_id: int, children: _Children) -> None:
    for child_run, pidfd, init_pidfd in children.values():
        if child_run == run_id:
            _signal(init_pidfd)  # the whole namespace
            _signal(pidfd)


def _spawn(
    message: dict[str, Any],
    fds: list[int],
    children: _Children,
    selector: selectors.BaseSelector,
    inits: InitSpawner,
    own_pid_namespace: int,
) -> None:
    init = inits.new_namespace()
    init_pidfd = os.pidfd_open(init)
    namespace = os.open(f"/proc/{init}/ns/pid", os.O_RDONLY)
    try:
        linux.setns(namespace, linux.CLONE_NEWPID)  # our next child is born in it, as pid 2
    finally:
        os.close(namespace)
    pid = os.fork()
    if pid == 0:
        _sandboxed(message, fds)
    linux.setns(own_pid_namespace, linux.CLONE_NEWPID)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    children[pid] = (message["id"], pidfd, init_pidfd)
    selector.register(pidfd, selectors.EVENT_READ)


def _reap(sock: socket.socket, children: _Children, selector: selectors.BaseSelector) -> None:
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
        run_id, pidfd, init_pidfd = entry
        _signal(init_pidfd)  # nothing may outlive the run
        selector.unregister(pidfd)
        for fd in (pidfd, init_pidfd):
            os.close(fd)
        cpu = usage.ru_utime + usage.ru_stime
        sock.send(
            json.dumps({"event": "exit", "id": run_id, "status": status, "cpu": cpu}).encode()
        )


def _sandboxed(message: dict[str, Any], fds: list[int]) -> NoReturn:
    """Pid 2: join the run's cgroups, put the pipes at fds 0-3, run the job (here or exec'd)."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setsid()  # no controlling terminal, its own process group (TIOCSTI, group kills)
        for path in message["cgroup_procs"]:
            with open(path, "w") as f:
                f.write("0")  # "0" moves the writer
        linux.prctl(linux.PR_SET_DUMPABLE, 0)
        # Copies above fd 9 first, so no dup2 below can overwrite a pipe before it is moved.
        job, output, result = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds)
        os.dup2(job, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(result, runner.RESULT_FD)
        os.closerange(runner.RESULT_FD + 1, 1 << 30)
        if message["mode"] == "exec":
            argv = exec_argv(message["package_root"])
            os.execve(argv[0], argv, _EXEC_ENV)  # noqa: S606 - a fixed interpreter, no shell
        runner.serve(announce_ready=False)
    except BaseException:
        traceback.print_exc()
    os._exit(EXIT_SETUP_FAILED)
