"""Per-child cgroup v1 memory, pids and cpu limits, nested under the zygote's own cgroups.

RLIMIT_AS bounds what one process maps; the memory cgroup bounds what the child really uses,
tmpfs files included, and tells us afterwards whether the kernel killed it for memory. The pids
cgroup bounds threads, which seccomp cannot (threads are allowed). Where the controllers are not
mounted or not writable the layer is reported inactive and the rlimits still apply.

The cpu cgroup (its own layer, "cpu": optional on its own) gives every run the same weight and at
most one core: a worker runs more slots than cores so that sleeping or blocked runs do not hold a
core's worth of grading (issue 13, finding 8), and this keeps the runs that do compute, threads
included, from taking more than their share. RLIMIT_CPU stays the guard against loops.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from dataclasses import dataclass

_ROOT = "/sys/fs/cgroup"
_SELF = "/proc/self/cgroup"
_counter = itertools.count()
CPU_SHARES = 1024  # the same weight for every run
CPU_QUOTA_CORES = 1.0  # at most one core per run, whatever threads it starts


def _own_dir(controller: str, root: str = _ROOT, self_cgroup: str = _SELF) -> str | None:
    """This process's writable cgroup v1 directory for ``controller``, or None.

    On a cgroup v2-only host /proc/self/cgroup has just the unified line ("0::/path"), which
    names no controller, so every layer here reports inactive (and nothing under the unified
    hierarchy is touched): the rlimits still apply, but a GPU slot (no RLIMIT_AS) then has no
    memory bound at all. README.md says so under Known limits.
    """
    base = os.path.join(root, controller)
    try:
        with open(self_cgroup) as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controller in controllers.split(","):
                    own = os.path.join(base, path.lstrip("/"))
                    return own if os.access(own, os.W_OK) else None
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class ChildCgroup:
    memory: str
    pids: str
    cpu: str | None = None

    @property
    def paths(self) -> list[str]:
        return [self.memory, self.pids, *([self.cpu] if self.cpu else [])]

    @property
    def procs_files(self) -> list[str]:
        return [os.path.join(path, "cgroup.procs") for path in self.paths]

    def oom_killed(self) -> bool:
        try:
            with open(os.path.join(self.memory, "memory.oom_control")) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value) > 0
            with open(os.path.join(self.memory, "memory.failcnt")) as f:
                return int(f.read()) > 0
        except (OSError, ValueError):
            return False

    def remove(self, attempts: int = 20) -> bool:
        """Remove both directories; False if one is still busy (the caller tries again later).

        The pid namespace is gone once its init is reaped, but the kernel may need a moment to
        release the last task.
        """
        removed = True
        for path in self.paths:
            for attempt in range(attempts):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if attempt == attempts - 1:
                        removed = False
                    else:
                        time.sleep(0.005)
        return removed


class Cgroups:
    """Creates one memory+pids(+cpu) cgroup set per sandboxed child."""

    def __init__(self, root: str = _ROOT, self_cgroup: str = _SELF) -> None:
        self.memory_parent = _own_dir("memory", root, self_cgroup)
        self.pids_parent = _own_dir("pids", root, self_cgroup)
        self.cpu_parent = _own_dir("cpu", root, self_cgroup)
        self.prefix = f"quizbank-{os.getpid()}-"
        self.cpu_active = False  # probed on its own: memory and pids work without it
        self.active = self._probe()
        if self.active:
            self.cpu_active = self._probe_cpu()
            self._sweep()

    def _probe(self) -> bool:
        if not (self.memory_parent and self.pids_parent):
            return False
        try:
            self.create(memory_bytes=64 << 20, pids=8).remove()
        except OSError:
            return False
        return True

    def _probe_cpu(self) -> bool:
        if not self.cpu_parent:
            return False
        path = os.path.join(self.cpu_parent, f"{self.prefix}probe")
        try:
            os.mkdir(path)
        except OSError:
            return False
        try:
            _limit_cpu(path)
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(path)
        return True

    def _sweep(self) -> None:
        """Remove directories left by zygotes that were killed before they cleaned up."""
        parents = [self.memory_parent, self.pids_parent]
        for parent in parents + ([self.cpu_parent] if self.cpu_active else []):
            assert parent is not None
            for name in os.listdir(parent):
                if not name.startswith("quizbank-"):
                    continue
                owner = name.split("-")[1]
                if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(parent, name))

    def create(self, *, memory_bytes: int, pids: int) -> ChildCgroup:
        assert self.memory_parent and self.pids_parent
        name = f"{self.prefix}{next(_counter)}"
        group = ChildCgroup(
            os.path.join(self.memory_parent, name), os.path.join(self.pids_parent, name)
        )
        if self.cpu_active:
            assert self.cpu_parent
            group = ChildCgroup(group.memory, group.pids, os.path.join(self.cpu_parent, name))
        os.mkdir(group.memory)
        try:
            os.mkdir(group.pids)
            _write(os.path.join(group.memory, "memory.limit_in_bytes"), memory_bytes)
            _write(os.path.join(group.pids, "pids.max"), pids)
            if group.cpu:
                os.mkdir(group.cpu)
                _limit_cpu(group.cpu)
        except OSError:
            group.remove()
            raise
        return group


def _limit_cpu(path: str) -> None:
    with open(os.path.join(path, "cpu.cfs_period_us")) as f:
        period = int(f.read())
    _write(os.path.join(path, "cpu.shares"), CPU_SHARES)
    _write(os.path.join(path, "cpu.cfs_quota_us"), int(period * CPU_QUOTA_CORES))


def _write(path: str, value: int) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def set_memory_limit(memory_dir: str, extra_bytes: int) -> None:
    """Limit the cgroup to what it already uses plus ``extra_bytes`` (the child calls this).

    A fresh single-use interpreter has charged torch (and CUDA) to its cgroup by the time the job
    arrives; the job's memory limit is on top of that, so it means the same on both paths.
    """
    with open(os.path.join(memory_dir, "memory.usage_in_bytes")) as f:
        used = int(f.read())
    _write(os.path.join(memory_dir, "memory.limit_in_bytes"), used + extra_bytes)
