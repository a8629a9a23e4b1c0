"""Attack tests for issue 11's remaining findings: forbid rules enforced by a call trap (7), the
seccomp allow list, file watches and per-run uids (10), and hidden inputs drawn per run (5)."""

from __future__ import annotations

import re

from grader.tests.helpers import assert_still_grading, code_job, probe_job
from grader.tests.test_attacks import assert_blocked


def test_file_watches_and_syscalls_newer_than_the_filter_are_refused(pool):
    # inotify on the read-only binds would show the host's opens of the libraries and the venv;
    # the rest are syscalls a deny list written before them let through (x86-64 numbers).
    result = pool.grade(
        probe_job("""
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)
        CALLS = {"inotify_init": (253,), "inotify_init1": (294, 0),
                 "fanotify_init": (300, 0, 0), "modify_ldt": (154, 0, buf, 16),
                 "memfd_secret": (447, 0), "cachestat": (451, 0, buf, buf, 0),
                 "listmount": (458, buf, buf, 4, 0), "statmount": (457, buf, buf, 64, 0),
                 "open_tree_attr": (467, -100, b"/", 0, 0, 0), "mseal": (462, 0, 0, 0),
                 "pkey_alloc": (330, 0, 0), "landlock_create_ruleset": (444, 0, 0, 1)}
        def probe():
            allowed = []
            for name, (nr, *args) in CALLS.items():
                if libc.syscall(nr, *args) != -1:
                    allowed.append(f"{name} (ran)")
                elif ctypes.get_errno() not in (errno.EPERM, errno.ENOSYS):
                    allowed.append(f"{name} ({errno.errorcode.get(ctypes.get_errno())})")
            fd = libc.syscall(294, 0)
            if fd >= 0 and libc.syscall(254, fd, b"/usr/lib", 0x20) >= 0:
                allowed.append("a watch on /usr/lib")
            return ", ".join(allowed) or "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_what_python_needs_still_works_under_the_allow_list(pool):
    # Threads, timers, files in /tmp, select on a pipe, getrandom, a thread name: the everyday
    # syscalls an allow list must not break (the bank's exercises and answer blocks are the rest).
    result = pool.grade(
        probe_job("""
        import os, random, selectors, shutil, signal, tempfile, threading, time
        def probe():
            out = []
            t = threading.Thread(target=lambda: out.append(1), name="worker")
            t.start(); t.join()
            timer = threading.Timer(0.01, lambda: out.append(2)); timer.start(); timer.join()
            signal.setitimer(signal.ITIMER_REAL, 0)
            with tempfile.TemporaryDirectory() as d:
                open(os.path.join(d, "a"), "w").write("x")
                shutil.copy2(os.path.join(d, "a"), os.path.join(d, "b"))
                os.rename(os.path.join(d, "b"), os.path.join(d, "c"))
                out.append(sorted(os.listdir(d)))
            r, w = os.pipe(); os.write(w, b"x")
            sel = selectors.DefaultSelector(); sel.register(r, selectors.EVENT_READ)
            out.append(len(sel.select(1)))
            out.append(len(os.urandom(8)) + len(random.SystemRandom().randbytes(2)))
            time.sleep(0.001)
            return "blocked" if out == [1, 2, ["a", "c"], 1, 10] else repr(out)
        """)
    )
    assert_blocked(result)


UID_PROBE = """
import os
print("uid", os.getuid(), os.getgid(), os.stat("/sandbox").st_uid)
def probe():
    return "blocked"
"""


def test_each_run_has_its_own_uid(pool):
    # RLIMIT_NPROC counts per uid: a shared uid let one run's threads starve the next run's.
    seen = []
    for _ in range(6):
        result = pool.grade(code_job(UID_PROBE))
        assert result["status"] == "passed", result
        uid, gid, owner = map(int, re.search(r"uid (\d+) (\d+) (\d+)", result["output"]).groups())
        assert uid == gid == owner
        assert uid not in (0, 65534)
        seen.append(uid)
    # Consecutive runs of one zygote take the next uid of its pool; zygotes' pools are disjoint.
    assert len(set(seen)) == len(seen), seen
