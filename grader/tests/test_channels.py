"""What one sandbox could learn of the host or pass to another (issue 24, findings 5, 7 and 8):
locks on the shared read-only files, memfds (pages RLIMIT_AS does not count), the host-wide
files of /proc and the whole of /usr/lib."""

from __future__ import annotations

from grader.tests.helpers import assert_still_grading, probe_job


def test_no_lock_command_works_on_the_files_every_sandbox_shares(pool):
    # Two concurrent runs exchanged a secret through locks on torch's own files.
    code = """
    import fcntl, os, struct, torch
    def probe():
        got = []
        fd = os.open(torch.__file__, os.O_RDONLY)
        lock = struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 1, 0)
        attempts = {
            "flock": lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB),
            "F_SETLK": lambda: fcntl.fcntl(fd, fcntl.F_SETLK, lock),
            "F_SETLKW": lambda: fcntl.fcntl(fd, fcntl.F_SETLKW, lock),
            "F_GETLK": lambda: fcntl.fcntl(fd, fcntl.F_GETLK, lock),
            "F_OFD_GETLK": lambda: fcntl.fcntl(fd, 36, lock),
            "F_OFD_SETLK": lambda: fcntl.fcntl(fd, 37, lock),
            "F_OFD_SETLKW": lambda: fcntl.fcntl(fd, 38, lock),
            "F_SETLEASE": lambda: fcntl.fcntl(fd, 1024, fcntl.F_RDLCK),
        }
        for name, attempt in attempts.items():
            try:
                attempt()
                got.append(name)
            except OSError:
                pass
        fcntl.fcntl(fd, fcntl.F_GETFD)  # what Python needs of fcntl still works
        return "blocked" if not got else "locked with " + ", ".join(got)
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "passed", result["checks"][0]["message"]


def test_a_cpu_slot_cannot_create_a_memfd(pool):
    # memfd pages are not counted by RLIMIT_AS: one run held +2.4 GB against a 1024 MB limit.
    code = """
    import os
    def probe():
        try:
            fd = os.memfd_create("x")
        except PermissionError:
            return "blocked"
        os.ftruncate(fd, 1 << 20)
        return "a memfd"
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "passed", result["checks"][0]["message"]


def test_proc_shows_processes_only_and_usr_lib_what_torch_needs(pool):
    code = """
    import os
    def probe():
        proc = [n for n in os.listdir("/proc") if not n.isdigit()]
        lib = os.listdir("/usr/lib")
        extra = [n for n in lib if n not in ("locale", "x86_64-linux-gnu")]
        extra = [n for n in extra if not n.startswith("python3")]
        if sorted(proc) != ["self", "thread-self"] or extra:
            return f"/proc has {sorted(proc)[:12]}; /usr/lib has {sorted(extra)[:12]}"
        return "blocked"
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "passed", result["checks"][0]["message"]
    assert_still_grading(pool)
