"""Per-run memory, pids and cpu limits in cgroups: v1 controllers, or cgroup v2 where delegated.

RLIMIT_AS bounds what one process maps; the memory cgroup bounds what the run really uses, tmpfs
files included, and tells us afterwards whether the kernel killed it for memory. The pids cgroup
bounds threads, which seccomp cannot (threads are allowed). Where the controllers cannot be used
the layer is reported inactive and the rlimits still apply.

Every zygote makes one parent of its own, ``quizbank-<pid>-<random>``, with an exclusive mkdir
(retried on EEXIST), and its runs' groups inside it (issue 24, finding 6): two zygotes in separate
PID namespaces under one cgroup can have the same pid, and with names made of the pid alone they
created, joined and removed each other's groups. Nothing here touches a directory outside its own
parent; a zygote killed with SIGKILL leaves that parent behind (empty once its runs are gone).

The hierarchy is cgroup v1 where this process is in v1 memory and pids cgroups. Otherwise, on a
cgroup v2 host, the unified hierarchy is used where the memory and pids controllers can be enabled
for the parent (``+memory +pids`` in the subtree_control of this process's own cgroup: the root
cgroup, or a delegated one): ``memory.max``, ``pids.max``, ``cpu.weight``/``cpu.max``, and
``memory.events`` for the OOM kill (issue 24, finding 5).

The cpu cgroup (its own layer, "cpu": optional on its own) gives every run the same weight and at
most one core: a worker runs more slots than cores so that sleeping or blocked runs do not hold a
core's worth of grading (issue 13, finding 8), and this keeps the runs that do compute, threads
included, from taking more than their share. RLIMIT_CPU stays the guard against loops.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import time
from dataclasses import dataclass

_ROOT = "/sys/fs/cgroup"
_SELF = "/proc/self/cgroup"
CPU_SHARES = 1024  # the same weight for every run (v1)
CPU_WEIGHT = 100  # the same weight for every run (v2, its default)
CPU_QUOTA_CORES = 1.0  # at most one core per run, whatever threads it starts
_CPU_PERIOD_US = 100_000
_ATTEMPTS = 8


def _own_dir(controller: str, root: str = _ROOT, self_cgroup: str = _SELF) -> str | None:
    """This process's writable cgroup v1 directory for ``controller``, or None."""
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


def _unified_dir(root: str = _ROOT, self_cgroup: str = _SELF) -> str | None:
    """This process's writable cgroup v2 directory, where ``root`` is a cgroup2 mount."""
    if not os.path.exists(os.path.join(root, "cgroup.controllers")):
        return None
    try:
        with open(self_cgroup) as f:
            for line in f:
                number, controllers, path = line.rstrip("\n").split(":", 2)
                if number == "0" and controllers == "":
                    own = os.path.join(root, path.lstrip("/"))
                    return own if os.access(own, os.W_OK) else None
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class ChildCgroup:
    memory: str
    pids: str
    cpu: str | None = None
    unified: bool = False  # cgroup v2: one directory for every controller

    @property
    def paths(self) -> list[str]:
        if self.unified:
            return [self.memory]
        return [self.memory, self.pids, *([self.cpu] if self.cpu else [])]

    @property
    def procs_files(self) -> list[str]:
        return [os.path.join(path, "cgroup.procs") for path in self.paths]

    def oom_killed(self) -> bool:
        try:
            if self.unified:
                with open(os.path.join(self.memory, "memory.events")) as f:
                    for line in f:
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value) > 0
                return False
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
        """Remove its directories; False if one is still busy (the caller tries again later).

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
    """Creates one memory+pids(+cpu) cgroup set per sandboxed run, under this zygote's parent."""

    def __init__(self, root: str = _ROOT, self_cgroup: str = _SELF) -> None:
        self.unified = False
        self.memory_parent = self.pids_parent = self.cpu_parent = None
        self._counter = itertools.count()
        self.cpu_active = False  # probed on its own: memory and pids work without it
        self.active = False
        memory, pids = _own_dir("memory", root, self_cgroup), _own_dir("pids", root, self_cgroup)
        if memory and pids:
            self.memory_parent = self._make_parent(memory)
            self.pids_parent = self._make_parent(pids)
            cpu = _own_dir("cpu", root, self_cgroup)
            self.cpu_parent = self._make_parent(cpu) if cpu else None
        else:
            unified = _unified_dir(root, self_cgroup)
            if unified and self._delegate(unified):
                self.unified = True
                self.memory_parent = self.pids_parent = self._make_parent(unified)
                if self.memory_parent and not self._enable(self.memory_parent, "memory", "pids"):
                    self.close()
                    self.memory_parent = self.pids_parent = None
                if self.memory_parent and self._enable(self.memory_parent, "cpu"):
                    self.cpu_parent = self.memory_parent
        self.active = self._probe()
        if self.active:
            self.cpu_active = self._probe_cpu()
        if not self.active:
            self.close()

    @staticmethod
    def _make_parent(own: str) -> str | None:
        """This zygote's own directory under ``own``: a new name, created exclusively."""
        for _ in range(_ATTEMPTS):
            path = os.path.join(own, f"quizbank-{os.getpid()}-{secrets.token_hex(6)}")
            try:
                os.mkdir(path)
            except FileExistsError:
                continue
            except OSError:
                return None
            return path
        return None

    @staticmethod
    def _enable(path: str, *controllers: str) -> bool:
        """Enable ``controllers`` for the children of a v2 directory."""
        try:
            enable = " ".join(f"+{controller}" for controller in controllers)
            _write(os.path.join(path, "cgroup.subtree_control"), enable)
            with open(os.path.join(path, "cgroup.subtree_control")) as f:
                return set(controllers) <= {name.lstrip("+") for name in f.read().split()}
        except OSError:
            return False

    @classmethod
    def _delegate(cls, own: str) -> bool:
        """Whether the memory and pids controllers reach this process's own v2 cgroup's children
        (enabled already, or enabled now: possible in the root cgroup or a delegated one)."""
        try:
            with open(os.path.join(own, "cgroup.controllers")) as f:
                if not {"memory", "pids"} <= set(f.read().split()):
                    return False
        except OSError:
            return False
        return cls._enable(own, "memory", "pids")

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
        path = os.path.join(self.cpu_parent, "probe")
        try:
            os.mkdir(path)
        except OSError:
            return False
        try:
            _limit_cpu(path, self.unified)
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(path)
        return True

    def create(self, *, memory_bytes: int, pids: int) -> ChildCgroup:
        assert self.memory_parent and self.pids_parent
        for attempt in range(_ATTEMPTS):
            name = f"run-{next(self._counter)}"
            memory = os.path.join(self.memory_parent, name)
            try:
                os.mkdir(memory)  # exclusive: a name in use is skipped, never shared
            except FileExistsError:
                if attempt == _ATTEMPTS - 1:
                    raise
                continue
            break
        if self.unified:
            group = ChildCgroup(memory, memory, memory if self.cpu_active else None, unified=True)
            try:
                _write(os.path.join(memory, "memory.max"), memory_bytes)
                if os.path.exists(os.path.join(memory, "memory.swap.max")):
                    _write(os.path.join(memory, "memory.swap.max"), 0)  # max bounds RAM only
                _write(os.path.join(memory, "pids.max"), pids)
                if group.cpu:
                    _limit_cpu(memory, unified=True)
            except OSError:
                group.remove()
                raise
            return group
        cpu = os.path.join(self.cpu_parent, name) if self.cpu_active and self.cpu_parent else None
        group = ChildCgroup(memory, os.path.join(self.pids_parent, name), cpu)
        try:
            os.mkdir(group.pids)
            _write(os.path.join(group.memory, "memory.limit_in_bytes"), memory_bytes)
            _write(os.path.join(group.pids, "pids.max"), pids)
            if group.cpu:
                os.mkdir(group.cpu)
                _limit_cpu(group.cpu, unified=False)
        except OSError:
            group.remove()
            raise
        return group

    def close(self) -> None:
        """Remove this zygote's parents (only its own: runs' groups left inside go first)."""
        for parent in dict.fromkeys([self.memory_parent, self.pids_parent, self.cpu_parent]):
            if not parent:
                continue
            with contextlib.suppress(OSError):
                for name in os.listdir(parent):
                    if name.startswith(("run-", "probe")):
                        with contextlib.suppress(OSError):
                            os.rmdir(os.path.join(parent, name))
                os.rmdir(parent)


def _limit_cpu(path: str, unified: bool) -> None:
    if unified:
        _write(os.path.join(path, "cpu.weight"), CPU_WEIGHT)
        quota = int(_CPU_PERIOD_US * CPU_QUOTA_CORES)
        with open(os.path.join(path, "cpu.max"), "w") as f:
            f.write(f"{quota} {_CPU_PERIOD_US}")
        return
    with open(os.path.join(path, "cpu.cfs_period_us")) as f:
        period = int(f.read())
    _write(os.path.join(path, "cpu.shares"), CPU_SHARES)
    _write(os.path.join(path, "cpu.cfs_quota_us"), int(period * CPU_QUOTA_CORES))


def _write(path: str, value: int | str) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def set_memory_limit(memory_dir: str, extra_bytes: int) -> None:
    """Limit the cgroup to what it already uses plus ``extra_bytes`` (the child calls this).

    A fresh single-use interpreter has charged torch (and CUDA) to its cgroup by the time the job
    arrives; the job's memory limit is on top of that, so it means the same on both paths.
    """
    unified = os.path.exists(os.path.join(memory_dir, "memory.max"))
    usage, limit = (
        ("memory.current", "memory.max")
        if unified
        else (
            "memory.usage_in_bytes",
            "memory.limit_in_bytes",
        )
    )
    with open(os.path.join(memory_dir, usage)) as f:
        used = int(f.read())
    _write(os.path.join(memory_dir, limit), used + extra_bytes)
