"""PID namespaces for sandboxed runs, each with a tiny init as its pid 1.

Why a process of its own: every run needs a fresh PID namespace, and a namespace's pid 1 must be
a process created into it. Forking a copy of the warmed-up zygote costs tens of milliseconds (the
page tables of some 400 MB of torch), so the inits come from this small process instead, forked
from the zygote before torch is imported: a fork of it costs about a millisecond. The fork server
then forks the sandboxed process into the namespace (setns), where it is pid 2.

An init runs no code of the job. It ignores SIGCHLD, so the kernel reaps any orphan at once, and
it waits to be killed: killing it (SIGKILL from outside; from inside, nothing can signal it)
makes the kernel kill everything left in its namespace. Standard library only, on purpose.
"""

from __future__ import annotations

import os
import signal
import socket
import traceback
from typing import NoReturn

from grader import linux


class InitSpawner:
    """The fork server's handle on the small process that makes PID namespaces."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def start(cls) -> InitSpawner:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs)
        theirs.close()
        return cls(pid, ours)

    def new_namespace(self) -> int:
        """Make a PID namespace; return the host pid of its init."""
        self.sock.send(b"init")
        reply = self.sock.recv(64)
        if not reply.isdigit():
            raise OSError(f"no PID namespace: {reply.decode(errors='replace') or 'spawner gone'}")
        return int(reply)


def _serve(sock: socket.socket) -> NoReturn:
    try:
        # Dies with the zygote; and its inits with it, so no namespace outlives a slot.
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inits are reaped by the kernel
        linux.close_fds_except(sock.fileno())
        own_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
        while sock.recv(64):
            try:
                linux.unshare(linux.CLONE_NEWPID)  # the next fork is pid 1 of a new namespace
                pid = os.fork()
                if pid == 0:
                    _init()
                # unshare(CLONE_NEWPID) is refused until we point our children back home.
                linux.setns(own_namespace, linux.CLONE_NEWPID)
                sock.send(str(pid).encode())
            except OSError as error:
                sock.send(f"error: {error}".encode())
    except BaseException:
        traceback.print_exc()
    os._exit(0)


def _init() -> NoReturn:
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setsid()
        linux.prctl(linux.PR_SET_DUMPABLE, 0)
        os.closerange(0, 1 << 30)
        while True:
            signal.pause()
    finally:
        os._exit(1)
