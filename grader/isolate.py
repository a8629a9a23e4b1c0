"""Isolation of one sandboxed process, applied by the process to itself before it runs a job.

The process is already in a fresh PID namespace whose init is a trusted process (see
forkserver.py) and in its own cgroups; here it adds, in this order, each layer documented in
README.md: the remaining namespaces, a new root filesystem, resource limits, closed file
descriptors, a cleared environment, an unprivileged uid without capabilities, no_new_privs and a
seccomp filter. Any failure raises, and the caller exits without running the job.
"""

from __future__ import annotations

import fcntl
import functools
import glob
import os
import resource
import signal
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from grader import cgroups, linux, seccomp

# Each run gets its own uid and gid from a small pool per zygote (issue 11, finding 10): the
# kernel counts RLIMIT_NPROC per uid across the whole machine, so with one shared uid the threads
# of a run still being torn down, or of another slot's run, counted against the next run's limit.
# A zygote's pool is UIDS_PER_ZYGOTE uids derived from its pid (unique among live zygotes), used
# in turn; a run's whole PID namespace is killed when its verdict is decided, so a uid is free
# again long before it comes round. The range starts at UID_BASE, far above any uid a
# distribution, systemd or a container's subordinate range hands out; these uids own nothing on
# the host, so "other" permissions are all they get, exactly as nobody (65534) before.
UID_BASE = 0x40000000
UIDS_PER_ZYGOTE = 8
_PID_MAX = 1 << 22  # the kernel's largest pid_max


def sandbox_uid(zygote_pid: int, run_id: int) -> int:
    """The uid (and gid) of run ``run_id`` of the zygote with pid ``zygote_pid``."""
    return UID_BASE + (zygote_pid % _PID_MAX) * UIDS_PER_ZYGOTE + run_id % UIDS_PER_ZYGOTE


WORKDIR = "/sandbox"
RESULT_FD = 3  # fds 0-2 are stdio; 3 is the result channel to the zygote

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DEVICES = ("null", "zero", "full", "urandom", "random")
_MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    time_limit: float  # wall seconds for the job; the CPU limit follows from it
    memory_mb: int
    address_space: bool  # RLIMIT_AS: CPU jobs only, the CUDA driver reserves terabytes
    gpu_devices: bool  # add /dev/nvidia* to /dev
    cgroup_memory: str | None  # the child's memory cgroup, tightened once the job arrives
    uid: int  # the run's own uid and gid (sandbox_uid)


@dataclass(frozen=True)
class MountPlan:
    read_only_dirs: tuple[str, ...]  # bound at the same path, read-only
    read_only_files: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...]  # (path, target), e.g. /lib -> usr/lib


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _library_dirs() -> list[str]:
    """The directories right under /usr/lib that hold a file this process has mapped (with torch
    imported: the multiarch directory of the C libraries, the locale), not all of /usr/lib, which
    is an inventory of the host's software (issue 24, finding 8). Python's own directory comes
    from sys.path. All of /usr/lib where the mappings cannot be read."""
    try:
        with open("/proc/self/maps") as f:
            fields = [line.split(None, 5) for line in f]
    except OSError:
        return ["/usr/lib"]
    found = set()
    for entry in fields:
        path = entry[5].strip() if len(entry) == 6 else ""
        if path.startswith("/usr/lib/") and os.path.exists(path):
            found.add("/".join(path.split("/")[:4]))
    return sorted(found) or ["/usr/lib"]


@functools.cache
def mount_plan() -> MountPlan:
    """What the new root shows: the libraries and the interpreter's import path, nothing else.

    Import path entries come from sys.path, so the plan follows wherever the interpreter and its
    venv live. The project itself is never mounted: an entry that is the project or contains it
    is dropped, and an entry inside it is kept only if it is a site-packages directory (the
    grader venv). The zygote imports everything a child needs before forking.
    """
    dirs: list[str] = []
    for candidate in [*_library_dirs(), "/usr/lib64", "/usr/lib32", *sys.path]:
        path = os.path.abspath(candidate) if candidate else ""
        if not path or not os.path.isdir(path) or path == "/":
            continue
        if _inside(_PACKAGE_ROOT, path):
            continue  # the project directory, or one of its parents
        if _inside(path, _PACKAGE_ROOT) and os.path.basename(path) not in (
            "site-packages",
            "dist-packages",
        ):
            continue
        if any(_inside(path, kept) for kept in dirs):
            continue
        dirs = [kept for kept in dirs if not _inside(kept, path)] + [path]
    links: list[tuple[str, str]] = []
    for name in ("lib", "lib64", "lib32", "libx32", "bin", "sbin"):
        top = "/" + name
        if os.path.islink(top):
            links.append((top, os.readlink(top)))
        elif os.path.isdir(top) and name.startswith("lib"):
            dirs.append(top)
    files = tuple(p for p in ("/etc/ld.so.cache",) if os.path.isfile(p))
    return MountPlan(tuple(dirs), files, tuple(links))


_NAMESPACES = (
    linux.CLONE_NEWNS
    | linux.CLONE_NEWNET
    | linux.CLONE_NEWIPC
    | linux.CLONE_NEWUTS
    | linux.CLONE_NEWCGROUP
)


_host_mount_namespace: int | None = None  # the one enter_namespaces() left


def _mount_namespace() -> int:
    return os.stat("/proc/self/ns/mnt").st_ino


def enter_namespaces() -> None:
    """Layer 4: new mount, network, IPC, UTS and cgroup namespaces, entered while the process
    has one thread. isolate() does this itself unless it was done first.

    Namespaces, and the root and working directories, belong to each thread: unshare() moves the
    calling thread only, and a thread keeps those it was started with. A single-use GPU process
    initialises CUDA, which starts the driver's helper threads, before it isolates itself; had
    it unshared only then, those threads would stay in the host's mount and network namespaces
    with the host's root as theirs, and /proc/self/task/<tid>/root would show the sandboxed code
    the host's whole filesystem (same thread group: no ptrace check stops it). Entered first,
    every thread started later is in these namespaces and shares one fs_struct (pthreads clone
    with CLONE_FS), so isolate()'s pivot_root and chdir move them all.
    """
    global _host_mount_namespace
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise RuntimeError(f"namespaces must be entered by a single thread, not {threads}")
    _host_mount_namespace = _mount_namespace()
    linux.unshare(_NAMESPACES)
    # Nothing mounted from here on may propagate back to the host's mount table.
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.sethostname("sandbox")
    # The process is pid 2 of a PID namespace of its own (the fork server's), but /proc is still
    # the host's, where its pid is another: the CUDA driver then fails to initialise ("error 304:
    # OS call failed", seen on an H100; `unshare --pid --fork` alone fails the same way, with
    # --mount-proc it works). A proc of its own PID namespace, in its own mount namespace, shows
    # it less of the host than before, not more.
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)


def isolate(limits: Limits, root_mountpoint: str, *, namespaces_entered: bool = False) -> None:
    """Apply every layer to the calling process. Must run as root; returns unprivileged.

    ``namespaces_entered``: enter_namespaces() ran before the process started any thread (a
    single-use process does, before it imports torch); unsharing again now would move only this
    thread (and give it an fs_struct of its own, which its pivot_root would then not share).
    """
    seccomp.preload()
    if limits.cgroup_memory:
        cgroups.set_memory_limit(limits.cgroup_memory, limits.memory_mb * _MiB + 64 * _MiB)
    if not namespaces_entered:
        enter_namespaces()
    if _host_mount_namespace is None or _mount_namespace() == _host_mount_namespace:
        # Still in the host's mount namespace: the new root would be the host's.
        raise RuntimeError("isolation must run in namespaces of its own (enter_namespaces)")
    # Chosen while the old root is still in place, so the paths read are the host's.
    keep = kept_descriptors(open_descriptors()) if limits.gpu_devices else set()
    # A single-use process (namespaces entered before torch loaded) has not read the processor's
    # features yet: cpuinfo reads them from /proc/cpuinfo at the first float16 or bfloat16 kernel,
    # so its /proc must show more than processes ("Failed to initialize cpuinfo!" otherwise).
    _enter_new_root(
        mount_plan(),
        root_mountpoint,
        limits.gpu_devices,
        limits.uid,
        processes_only=not namespaces_entered,
    )
    # Close before RLIMIT_NOFILE drops, so a descriptor above the new limit cannot survive (a
    # kept one is one of the few the CUDA driver opened at start, far below the limit).
    linux.close_fds_except(RESULT_FD, *keep)
    _set_rlimits(limits)
    _clear_environment()
    _drop_privileges(limits.uid)
    # Only a slot without RLIMIT_AS (a GPU slot: the CUDA driver's own memfds) may create memfds.
    seccomp.install(allow_memfd=not limits.address_space)


# What a GPU slot keeps open through isolation besides fds 0-3 (see kept_descriptors).
_NVIDIA_DEVICES = "/dev/nvidia"
_PROCESS_LOCAL = ("anon_inode:[eventfd]", "anon_inode:[eventpoll]", "anon_inode:[timerfd]")


def open_descriptors() -> dict[int, tuple[str, int, int]]:
    """fd -> (what /proc/self/fd says it is, its st_mode, its access mode) for every descriptor
    above RESULT_FD."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= RESULT_FD:
            continue
        try:
            found[fd] = (
                os.readlink(f"/proc/self/fd/{fd}"),
                os.fstat(fd).st_mode,
                fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE,
            )
        except OSError:
            continue  # closed meanwhile (the directory listing's own descriptor)
    return found


def kept_descriptors(descriptors: Mapping[int, tuple[str, int, int]]) -> set[int]:
    """Of a GPU slot's descriptors above RESULT_FD, those it keeps through isolation: the CUDA
    driver's own, which it opened while it initialised and must still have to run anything.

    Kept: character devices opened at /dev/nvidia* (nvidiactl, nvidia<N>, nvidia-uvm, ...). They
    grant nothing the sandbox does not have anyway: the same nodes are bound into its /dev for the
    driver to open more of them (it opens one per memory mapping), and what a handle reaches is
    this process's own GPU context, as the driver's per-client checks keep contexts apart. Also
    kept: what names nothing outside this process, which the driver's event thread may be
    polling or still using (closing one under it makes its poll spin on POLLNVAL, or watch
    whatever the submission opens next under that number): an eventfd, epoll or timerfd, a
    memfd, and a pipe with both ends here. Every descriptor above fd 3 was opened by this
    process after its exec (the fork server closes the rest first), so none of these is shared
    with another process.

    Closed, as in every other sandbox: files and directories (a directory opened on the host is
    a way out of the new root), sockets, every other device (/dev/null as well: the sandbox has
    its own), pipes with an end elsewhere, and any other kind of descriptor.
    """
    ends: dict[str, set[int]] = {}
    for target, _, access in descriptors.values():
        if target.startswith("pipe:"):
            ends.setdefault(target, set()).add(access)
    both_ends = {target for target, modes in ends.items() if {os.O_RDONLY, os.O_WRONLY} <= modes}
    return {
        fd
        for fd, (target, mode, _) in descriptors.items()
        if (stat.S_ISCHR(mode) and target.startswith(_NVIDIA_DEVICES))
        or target in _PROCESS_LOCAL
        or (stat.S_ISREG(mode) and target.startswith("/memfd:"))
        or (stat.S_ISFIFO(mode) and target in both_ends)
    }


def _enter_new_root(
    plan: MountPlan, root: str, gpu_devices: bool, uid: int, *, processes_only: bool = True
) -> None:
    linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,mode=755")

    def bind(source: str, is_dir: bool = True, device: bool = False) -> None:
        target = root + source
        if is_dir:
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "w").close()
        linux.mount(source, target, None, linux.MS_BIND)
        # A bind mount takes its own flags only on a second, remounting call.
        flags = linux.MS_BIND | linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID
        linux.mount(None, target, None, flags if device else flags | linux.MS_NODEV)

    # The scratch filesystems come first: the interpreter or its venv may live under /tmp (a CI
    # checkout, say), and a tmpfs mounted over /tmp afterwards would hide their bind mounts.
    scratch = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
    for path, options in (
        ("/dev/shm", "size=16m,nr_inodes=256,mode=1777"),  # noqa: S108 - inside the new root
        ("/tmp", "size=32m,nr_inodes=512,mode=1777"),  # noqa: S108 - inside the new root
        (WORKDIR, f"size=32m,nr_inodes=512,mode=755,uid={uid},gid={uid}"),
    ):
        os.makedirs(root + path, exist_ok=True)
        linux.mount("tmpfs", root + path, "tmpfs", scratch, options)

    for path in plan.read_only_dirs:
        bind(path)
    for path in plan.read_only_files:
        bind(path, is_dir=False)
    for path, target in plan.symlinks:
        os.symlink(target, root + path)

    os.makedirs(root + "/dev", exist_ok=True)
    for name in _DEVICES:
        bind("/dev/" + name, is_dir=False, device=True)
    if gpu_devices:
        for path in sorted(glob.glob("/dev/nvidia*")):
            bind(path, is_dir=os.path.isdir(path), device=True)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, f"{root}/dev/{name}")

    os.makedirs(root + "/proc")
    # A fresh proc for the new PID namespace; hidepid=2 hides processes of other uids (its init);
    # subset=pid (Linux 5.8) shows nothing but the processes: not the host's locks, load,
    # pressure, memory or mounts (issue 24, findings 7 and 8).
    try:
        if not processes_only:
            raise OSError("a single-use process reads /proc/cpuinfo after isolation")
        linux.mount("proc", root + "/proc", "proc", scratch, "hidepid=2,subset=pid")
    except OSError:  # an older kernel, or a single-use (GPU) process
        linux.mount("proc", root + "/proc", "proc", scratch, "hidepid=2")

    os.makedirs(root + "/etc", exist_ok=True)
    with open(root + "/etc/passwd", "w") as f:
        f.write(f"root:x:0:0::/:/nonexistent\nsandbox:x:{uid}:{uid}::{WORKDIR}:/\n")
    with open(root + "/etc/group", "w") as f:
        f.write(f"root:x:0:\nsandbox:x:{uid}:\n")
    with open(root + "/etc/hostname", "w") as f:
        f.write("sandbox\n")

    # pivot_root(".", ".") stacks the old root on the new one; detaching it leaves no path back.
    os.chdir(root)
    linux.pivot_root(".", ".")
    linux.umount2(".", linux.MNT_DETACH)
    os.chdir("/")
    linux.mount(
        None, "/", None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
    )
    os.chdir(WORKDIR)


def _set_rlimits(limits: Limits) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    # The CPU limit counts from now: a single-use process has already spent seconds importing.
    cpu = int(usage.ru_utime + usage.ru_stime + limits.time_limit) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if limits.address_space:
        # Relative to what is mapped already (torch maps ~700 MB before the job starts).
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        cap = mapped + limits.memory_mb * _MiB
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * _MiB, 16 * _MiB))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (128, 128))
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
    # Past RLIMIT_FSIZE a write should fail with EFBIG, not kill the process with SIGXFSZ.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _clear_environment() -> None:
    os.environ.clear()
    os.environ.update(
        {"HOME": WORKDIR, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}  # noqa: S108
    )


def _drop_privileges(uid: int) -> None:
    if not UID_BASE <= uid < UID_BASE + _PID_MAX * UIDS_PER_ZYGOTE:
        raise ValueError(f"uid {uid} is not a sandbox uid")
    for cap in range(linux.last_cap() + 1):
        linux.prctl(linux.PR_CAPBSET_DROP, cap)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    # With every uid non-zero the kernel clears the permitted and effective capability sets.
    os.setresuid(uid, uid, uid)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)
