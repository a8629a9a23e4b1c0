"""The seccomp filter loaded into every sandboxed process (libseccomp through ctypes).

It is an allow list (issue 11, finding 10). A deny list let every syscall the kernel gained after
it was written reach the kernel from hostile code (``modify_ldt``, ``memfd_secret``,
``open_tree_attr``, ``listmount``, ``cachestat``, ...), and each new syscall is new attack surface.
ALLOWED names what Python, torch and the CUDA driver use after the filter loads, group by group,
each with the reason. It was derived by tracing (``strace -ff``) every sandboxed process while the
bank's exercises and answer blocks ran, keeping what they called after ``seccomp()``, and adding
the calls of the same families a Python program makes on other paths (threads, timers, polling,
files in /tmp). The bank's exercises and answer blocks are the regression test.

Anything not allowed fails with ENOSYS, the error of a kernel that lacks the syscall: libraries
probe new syscalls (glibc's clone3, close_range, faccessat2...) and fall back on ENOSYS, where
EPERM makes some of them give up and a kill would turn a harmless probe into a crash; and the
submission cannot tell a filtered call from an old kernel. Calls an attack needs (DENIED: new
processes and programs, sockets, other processes, namespaces and mounts, file watches, kernel
attack surface) fail with EPERM instead, so the submission sees an ordinary PermissionError.
clone3 fails with ENOSYS so glibc falls back to clone, where the flags can be inspected (threads
are allowed, processes are not). A syscall made through another ABI (x32, i386) kills the
process: libseccomp's default for a foreign architecture, and the right one, since no Python code
makes such calls by accident.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno

_ACT_ALLOW = 0x7FFF0000
_ATTR_CTL_TSYNC = 4  # enum scmp_filter_attr: SCMP_FLTATR_CTL_TSYNC
_CMP_NE = 1
_CMP_EQ = 4
_CMP_MASKED_EQ = 7
_CLONE_THREAD = 0x00010000
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
# fcntl commands that lock, lease or watch a file: F_GETLK, F_SETLK, F_SETLKW, the open file
# description locks F_OFD_GETLK/SETLK/SETLKW, F_SETLEASE, F_GETLEASE, F_NOTIFY.
FCNTL_DENIED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


ALLOWED = (
    # Reading and writing descriptors: pipes to the zygote, files in /tmp and /sandbox, the
    # libraries and .py files on the read-only binds (Python's open() calls ioctl(TCGETS) and
    # lseek on every file it opens).
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2", "lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
    "fsync", "fdatasync", "ftruncate", "truncate", "fallocate", "sendfile", "copy_file_range",
    "pipe", "pipe2", "ioctl",
    # The filesystem view the new root shows (imports stat and open thousands of files).
    "open", "openat", "openat2", "creat", "stat", "fstat", "lstat", "newfstatat", "statx",
    "statfs", "fstatfs", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
    "getdents", "getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir",
    "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
    "symlinkat", "chmod", "fchmod", "fchmodat", "umask", "utime", "utimes", "utimensat",
    "futimesat",
    # Extended attributes: shutil.copy2 copies them and does not expect ENOSYS.
    "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    # Memory: the allocator, torch's tensors, mmap of shared libraries; the NUMA policy calls are
    # what OpenMP and the CUDA driver use. memfd_create only on GPU slots (install's allow_memfd).
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "msync", "mincore", "mlock",
    "mlock2", "munlock", "get_mempolicy", "set_mempolicy", "mbind",
    "membarrier",
    # Threads (clone is filtered below: CLONE_THREAD only) and their synchronisation.
    "exit", "exit_group", "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
    "futex", "futex_waitv", "sched_yield", "sched_getaffinity", "sched_setaffinity",
    "sched_getparam", "sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min",
    "getpriority", "arch_prctl", "wait4", "waitid",
    # Time, sleeping and timers (time.sleep, signal.alarm, threading timeouts).
    "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time",
    "getitimer", "setitimer", "alarm", "timer_create", "timer_settime", "timer_gettime",
    "timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime", "timerfd_gettime",
    # Signals to itself and its own threads (the PID namespace holds nothing else it may signal).
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
    "rt_sigtimedwait", "sigaltstack", "restart_syscall", "pause", "kill", "tgkill", "tkill",
    # Waiting on descriptors (selectors, threading, the CUDA driver's event loop).
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4",
    # Who and where it is, its limits (lowering them only: it has no capability to raise them).
    "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "getresgid", "getgroups", "getpgrp", "getpgid", "getsid", "getrlimit", "setrlimit",
    "prlimit64", "getrusage", "times", "sysinfo", "uname", "getcpu", "getrandom", "capget",
)  # fmt: skip

# prctl options Python, glibc and torch use (thread names, reading its own state); the rest
# (PR_SET_DUMPABLE, PR_SET_PDEATHSIG, PR_SET_MM, ...) is ENOSYS like any unlisted call.
_PRCTL = (
    3,  # PR_GET_DUMPABLE
    15,  # PR_SET_NAME
    16,  # PR_GET_NAME
    21,  # PR_GET_SECCOMP
    23,  # PR_CAPBSET_READ
    39,  # PR_GET_NO_NEW_PRIVS
    0x53564D41,  # PR_SET_VMA (glibc names anonymous mappings)
)

DENIED = (
    # New processes and programs. Threads go through clone, filtered below.
    "fork", "vfork", "execve", "execveat",
    # Networking of any family, including Unix sockets to the host's databases.
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # Other processes: their memory, their file descriptors, their signals by pidfd.
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    # Locks on files every sandbox shares (the read-only binds): two runs exchanged data through
    # them (issue 24, finding 7). fcntl's lock commands are refused by the first filter below.
    "flock",
    # Namespaces, mounts and the filesystem view.
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    # Watching the host's file opens on the read-only binds.
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    # Kernel attack surface that untrusted code never needs.
    "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key",
    "request_key", "perf_event_open", "userfaultfd", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "personality",
    "acct", "quotactl", "swapon", "swapoff", "reboot", "syslog", "vhangup", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "migrate_pages", "move_pages",
    "lookup_dcookie", "uselib", "_sysctl", "modify_ldt", "memfd_secret",
)  # fmt: skip


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


_lib: ctypes.CDLL | None = None


def preload() -> None:
    """Open libseccomp now, while the filesystem still has it, rather than inside the new root."""
    global _lib
    if _lib is None:
        _lib = _library()


def install(*, allow_memfd: bool = False) -> None:
    """Load the filters into the calling process; needs no_new_privs (or CAP_SYS_ADMIN).

    ``allow_memfd``: a GPU slot's CUDA driver creates memfds. A CPU slot has no use for them, and
    their pages are not counted by RLIMIT_AS (issue 24, finding 5), so there they are EPERM.
    """
    eperm = _act_errno(errno.EPERM)
    rules: list[tuple[int, str, tuple[_ArgCmp, ...]]] = [(_ACT_ALLOW, name, ()) for name in ALLOWED]
    rules += [(eperm, name, ()) for name in DENIED]
    rules.append((_ACT_ALLOW if allow_memfd else eperm, "memfd_create", ()))
    # clone with CLONE_THREAD makes a thread (allowed); without it, a process (EPERM).
    rules.append((_ACT_ALLOW, "clone", (_ArgCmp(0, _CMP_MASKED_EQ, _CLONE_THREAD, _CLONE_THREAD),)))
    rules.append((eperm, "clone", (_ArgCmp(0, _CMP_MASKED_EQ, _CLONE_THREAD, 0),)))
    # clone3 passes its flags in memory the filter cannot read: it is left to the default
    # (ENOSYS), so glibc falls back to clone.
    rules += [(_ACT_ALLOW, "prctl", (_ArgCmp(0, _CMP_EQ, option, 0),)) for option in _PRCTL]
    # Typing into a terminal (CVE-2017-5226): the sandbox has none, this is belt and braces. A
    # separate filter, loaded first (the allow list does not allow seccomp itself), because
    # libseccomp lets an unconditional allow of ioctl win over a conditional denial in the same
    # filter; the kernel applies the strictest verdict of all the filters.
    # The request is an unsigned int: compare its low 32 bits, as the kernel reads it.
    # fcntl's lock commands go in the same first filter, for the same reason.
    first: list[tuple[int, str, tuple[_ArgCmp, ...]]] = [
        (eperm, "ioctl", (_ArgCmp(1, _CMP_MASKED_EQ, 0xFFFFFFFF, request),))
        for request in (_TIOCSTI, _TIOCLINUX)
    ]
    first += [
        (eperm, "fcntl", (_ArgCmp(1, _CMP_MASKED_EQ, 0xFFFFFFFF, command),))
        for command in FCNTL_DENIED
    ]
    _load(_ACT_ALLOW, first)
    _load(_act_errno(errno.ENOSYS), rules)


def _load(default: int, rules: list[tuple[int, str, tuple[_ArgCmp, ...]]]) -> None:
    preload()
    assert _lib is not None
    lib = _lib
    ctx = lib.seccomp_init(default)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        # A filter binds the calling thread only, unless it is synchronised to all of them (the
        # kernel then sets no_new_privs on each too). A forked child has one thread, but a
        # single-use GPU process already runs the CUDA driver's helper threads, which share its
        # memory: unfiltered, code that hijacks one of them would have every syscall.
        rc = lib.seccomp_attr_set(ctx, _ATTR_CTL_TSYNC, 1)
        if rc < 0:
            raise OSError(-rc, "seccomp: no thread synchronisation (TSYNC)")
        for action, name, cmps in rules:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:  # not a syscall on this architecture (e.g. _sysctl on new kernels)
                continue
            array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name}")
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise OSError(-rc, "seccomp_load")
    finally:
        lib.seccomp_release(ctx)
