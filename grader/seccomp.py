"""The seccomp filter loaded into every sandboxed process (libseccomp through ctypes).

It is a deny list: Python and torch use a few hundred syscalls, and an allow list that breaks on
the next torch upgrade would get switched off. What it denies is what an escape or an attack on the
host needs: new processes and programs, sockets, other processes' memory, namespaces and mounts,
kernel attack surface (bpf, io_uring, keyrings, perf, userfaultfd, modules). Denied calls fail
with EPERM so the submission sees an ordinary PermissionError; clone3 fails with ENOSYS so glibc
falls back to clone, where the flags can be inspected (threads are allowed, processes are not).
A syscall made through another ABI (x32, i386) kills the process: libseccomp's default for a
foreign architecture, and the right one, since no Python code makes such calls by accident.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno

_ACT_ALLOW = 0x7FFF0000
_CMP_MASKED_EQ = 7
_CLONE_THREAD = 0x00010000
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


DENIED = (
    # New processes and programs. Threads go through clone, filtered below.
    "fork", "vfork", "execve", "execveat",
    # Networking of any family, including Unix sockets to the host's databases.
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # Other processes: their memory, their file descriptors, their signals by pidfd.
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    # Namespaces, mounts and the filesystem view.
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    # Kernel attack surface that untrusted code never needs.
    "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key",
    "request_key", "perf_event_open", "userfaultfd", "fanotify_init", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "personality",
    "acct", "quotactl", "swapon", "swapoff", "reboot", "syslog", "vhangup", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "migrate_pages", "move_pages",
    "lookup_dcookie", "uselib", "_sysctl",
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
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


_lib: ctypes.CDLL | None = None


def preload() -> None:
    """Open libseccomp now, while the filesystem still has it, rather than inside the new root."""
    global _lib
    if _lib is None:
        _lib = _library()


def install() -> None:
    """Load the filter into the calling process; needs no_new_privs (or CAP_SYS_ADMIN)."""
    preload()
    assert _lib is not None
    lib = _lib
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:

        def rule(action: int, name: str, *cmps: _ArgCmp) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:  # not a syscall on this architecture (e.g. _sysctl on new kernels)
                return
            array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name}")

        eperm = _act_errno(errno.EPERM)
        for name in DENIED:
            rule(eperm, name)
        # clone without CLONE_THREAD makes a process; with it, a thread (allowed).
        rule(eperm, "clone", _ArgCmp(0, _CMP_MASKED_EQ, _CLONE_THREAD, 0))
        # clone3 passes its flags in memory the filter cannot read: make glibc fall back to clone.
        rule(_act_errno(errno.ENOSYS), "clone3")
        # Typing into a terminal (CVE-2017-5226); the sandbox has none, this is belt and braces.
        for request in (_TIOCSTI, _TIOCLINUX):
            rule(eperm, "ioctl", _ArgCmp(1, _CMP_MASKED_EQ, 0xFFFFFFFF, request))
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise OSError(-rc, "seccomp_load")
    finally:
        lib.seccomp_release(ctx)
