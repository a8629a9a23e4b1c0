"""Hostile submissions: each asserts the exact outcome, then that the next one grades correctly.

Most attacks are written as a ``probe()`` that tries something and returns "blocked" when it
failed (the check then passes) or what it obtained when it did not (the visible check's message
then shows it). The anchors for what to attack: ioi/isolate, DMOJ's cptbox, openedx/codejail,
piston's tests, Judge0's symlink and environment escapes.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import tempfile
import textwrap
import threading
import time
import uuid

import pytest

from grader import jobs
from grader.isolate import UID_BASE
from grader.tests.helpers import (
    ENV_SECRET,
    REPO,
    assert_still_grading,
    code_job,
    exercise_job,
    probe_job,
)


def assert_blocked(result: dict) -> None:
    assert result["status"] == "passed", (
        result["checks"][0]["message"] if result["checks"] else result
    )


# Processes and programs


def test_a_fork_bomb_fails_at_the_first_fork(pool):
    result = pool.grade(code_job("import os\nwhile True:\n    os.fork()\n"))
    assert result["status"] == "error"
    assert "PermissionError at line 3 while loading" in result["message"]
    assert_still_grading(pool)


def test_subprocess_system_and_exec_cannot_start_programs(pool):
    result = pool.grade(
        probe_job("""
        import os, subprocess
        def probe():
            outcomes = []
            for attempt in (
                lambda: subprocess.run(["/bin/sh", "-c", "id"], capture_output=True),
                lambda: subprocess.run([os.sys.executable, "-c", "1"]),
                lambda: os.execv(os.sys.executable, ["python", "-c", "1"]),
                lambda: os.posix_spawn(os.sys.executable, ["python"], {}),
                lambda: os.popen("id").read() or 1 / 0,
            ):
                try:
                    attempt()
                    return "started a program"
                except (OSError, ZeroDivisionError):
                    pass
            status = os.system("id")
            return "blocked" if status != 0 else "os.system worked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


# Resources


def test_a_memory_bomb_is_out_of_memory(pool):
    result = pool.grade(code_job("hog = bytearray(8 << 30)\n", memory_limit_mb=256))
    assert result["status"] == "out_of_memory"
    assert result["message"] == "Your code used more than the memory limit of 256 MB."
    assert_still_grading(pool)


def test_a_torch_allocation_past_the_limit_is_out_of_memory(pool):
    job = probe_job("import torch\ndef probe():\n    return torch.ones(1 << 30).sum()\n")
    result = pool.grade({**job, "memory_limit_mb": 512})
    assert result["status"] == "out_of_memory"
    assert_still_grading(pool)


def test_an_infinite_loop_times_out(pool):
    result = pool.grade(code_job("while True:\n    pass\n", time_limit=0.5))
    assert result["status"] == "timed_out"
    assert result["message"] == "Your code ran longer than the time limit of 0.5 s."
    assert 450 <= result["duration_ms"] < 2500
    assert_still_grading(pool)


def test_busy_threads_time_out(pool):
    code = """
    import threading
    def spin():
        while True:
            pass
    for _ in range(8):
        threading.Thread(target=spin, daemon=True).start()
    spin()
    """
    result = pool.grade(code_job(code, time_limit=0.5))
    assert result["status"] == "timed_out"
    assert_still_grading(pool)


def test_sleeping_forever_times_out(pool):
    result = pool.grade(code_job("import time\ntime.sleep(10_000)\n", time_limit=0.5))
    assert result["status"] == "timed_out"
    assert_still_grading(pool)


def test_ignoring_every_signal_still_times_out(pool):
    code = """
    import signal
    for sig in signal.valid_signals():
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    def probe():
        while True:
            pass
    """
    result = pool.grade(probe_job(code, time_limit=0.5))
    assert result["status"] == "timed_out"
    assert result["checks"][0]["status"] == "error"
    assert result["checks"][0]["message"].startswith("Stopped here: ")
    assert_still_grading(pool)


def test_filling_the_disk_fails_with_a_full_disk(pool):
    result = pool.grade(
        probe_job("""
        import os
        def probe():
            written = {}
            for directory in ("/sandbox", "/tmp", "/dev/shm"):
                written[directory] = 0
                try:
                    with open(os.path.join(directory, "fill"), "wb") as f:
                        while written[directory] < 1 << 30:
                            f.write(b"x" * (1 << 20))
                            written[directory] += 1 << 20
                except OSError:
                    continue
                return f"wrote 1 GiB to {directory}"
            return "blocked" if max(written.values()) <= 32 << 20 else str(written)
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_many_small_files_run_out_of_inodes(pool):
    result = pool.grade(
        probe_job("""
        def probe():
            for i in range(100_000):
                try:
                    open(f"/tmp/f{i}", "w").close()
                except OSError:
                    return "blocked" if i < 1000 else f"created {i} files"
            return "created 100000 files"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_runaway_output_is_capped(pool):
    code = """
    import sys
    def probe():
        for _ in range(20_000):
            print("o" * 1000)
            print("e" * 1000, file=sys.stderr)
        return "blocked"
    """
    result = pool.grade(probe_job(code))
    assert_blocked(result)
    assert len(result["output"]) < 9 * 1024
    assert "[output truncated:" in result["output"]
    assert_still_grading(pool)


def test_a_huge_exception_message_is_capped(pool):
    result = pool.grade(probe_job("def probe():\n    raise ValueError('x' * 50_000_000)\n"))
    assert result["status"] == "failed"
    message = result["checks"][0]["message"]
    assert message.startswith("Raised ValueError: xxx")
    assert len(message) < 2100
    assert_still_grading(pool)


def test_values_too_large_to_send_back_fail_that_check_with_the_reason(pool):
    # A 32 MB result used to break the runner's own write, and the run ended as "your code ended
    # the process with status 0": feedback that was wrong (stop 42's red team).
    code = """
    import torch
    def probe():
        return torch.zeros(8_000_000)
    """
    job = probe_job(code)
    job["checks"].append({"name": "small", "visible": True, "code": "out = 1", "compare": "out"})
    result = pool.grade(job)
    assert result["status"] == "failed", result
    assert result["checks"][0]["message"] == (
        "Raised ResultTooLarge: the values it compares come to over 16 MiB"
    ), result["checks"][0]
    assert result["checks"][1]["status"] == "passed"  # the run went on
    assert_still_grading(pool)


def test_deep_recursion_fails_the_check(pool):
    result = pool.grade(probe_job("def probe(n=0):\n    return probe(n + 1)\n"))
    assert result["status"] == "failed"
    assert result["checks"][0]["message"].startswith("Raised RecursionError")
    assert_still_grading(pool)


def test_unbounded_native_recursion_is_a_crash(pool):
    code = """
    import sys
    sys.setrecursionlimit(10**8)
    def probe():
        nested = []
        for _ in range(10**6):
            nested = [nested]
        return repr(nested)  # recursion in C, past the 8 MiB stack
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "error"
    assert "killed by SIGSEGV" in result["message"]
    assert_still_grading(pool)


def test_a_segfault_is_an_error(pool):
    result = pool.grade(code_job("import ctypes\nctypes.string_at(0)\n"))
    assert result["status"] == "error"
    assert result["message"] == (
        "Your code's process was killed by SIGSEGV (a crash in native code) before it finished."
    )
    assert_still_grading(pool)


# The network and the host


def test_no_socket_of_any_kind_can_be_opened(pool):
    result = pool.grade(
        probe_job("""
        import socket
        def probe():
            attempts = {
                "postgres": lambda: socket.create_connection(("127.0.0.1", 5432), timeout=1),
                "redis": lambda: socket.create_connection(("127.0.0.1", 6379), timeout=1),
                "udp": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
                    b"x", ("127.0.0.1", 53)),
                "raw": lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                "ipv6": lambda: socket.create_connection(("::1", 5432), timeout=1),
                "unix": lambda: socket.socket(socket.AF_UNIX).connect(
                    "/var/run/postgresql/.s.PGSQL.5432"),
                "pair": lambda: socket.socketpair(),
                "netlink": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW),
            }
            for name, attempt in attempts.items():
                try:
                    attempt()
                    return f"{name} connected"
                except PermissionError:
                    pass
            return "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_the_environment_holds_nothing_from_the_caller(pool):
    result = pool.grade(
        probe_job("""
        import os
        def probe():
            environ = dict(os.environ)
            expected = {"HOME", "TMPDIR", "LANG", "OMP_NUM_THREADS"}
            if set(environ) != expected:
                return str(sorted(environ))
            try:
                with open("/proc/self/environ", "rb") as f:  # not readable: not dumpable
                    if b"sentinel" in f.read():
                        return "secret in /proc/self/environ"
            except PermissionError:
                pass
            return "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_project_files_secrets_and_the_database_are_not_visible(pool):
    # The path to the grader venv's site-packages exists (it is mounted there); nothing else does.
    targets = [
        str(REPO / "db.sqlite3"),
        str(REPO / ".env"),
        str(REPO / "quizbank" / "settings.py"),
        str(REPO / "manage.py"),
        str(REPO / "practice"),
        str(REPO / "grader" / "README.md"),
        str(REPO / "fixtures" / "bank" / "README.md"),
        str(REPO / ".venv" / "pyvenv.cfg"),
        "/etc/shadow",
        "/etc/ssl/private",
        "/root/.bashrc",
        "/root/.ssh",
        "/home",
        "/var/run/postgresql",
        "/sys/fs/cgroup",
        "/proc/1/environ",
        "/proc/1/root/etc/shadow",
    ]
    result = pool.grade(
        probe_job(f"""
        import os
        def probe():
            for path in {targets!r}:
                if os.path.exists(path):
                    return f"can see {{path}}"
            repo = {str(REPO)!r}
            if os.path.exists(repo) and os.listdir(repo) != [".venv-grader"]:
                return f"can list {{os.listdir(repo)}}"
            pids = [name for name in os.listdir("/proc") if name.isdigit()]
            if pids != [str(os.getpid())]:
                return f"can see processes {{pids}}"
            with open("/etc/passwd") as f:
                if "root:x:0:0::/:" not in f.read():
                    return "the host's /etc/passwd"
            return "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_its_own_memory_holds_no_secret_and_no_reference_solution(pool):
    # The reference carries a token the submission only knows by its hash: finding the token
    # anywhere in its memory would mean the fork leaked the reference (or the web's environment).
    token = uuid.uuid4().hex
    reference = f"def probe():\n    'ref-sentinel-{token}'\n    return 'blocked'\n"
    hashes = {
        "ref": hashlib.sha256(token.encode()).hexdigest(),
        "env": hashlib.sha256(ENV_SECRET.removeprefix("env-sentinel-").encode()).hexdigest(),
    }
    scan = f"""
    import ctypes, hashlib
    HASHES = {hashes!r}
    def probe():
        # /proc/self/mem is closed to a non-dumpable process; ctypes reads the same bytes.
        scanned = 0
        with open("/proc/self/maps") as maps:
            regions = [line.split() for line in maps]
        for fields in regions:
            # Writable or anonymous memory: the heap, stacks, data; not code or device maps.
            if not fields[1].startswith("rw") or len(fields) > 5 and fields[5].startswith(
                    ("/dev", "[v")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            data = ctypes.string_at(start, end - start)
            scanned += len(data)
            at = data.find(b"-sentinel-")
            while at >= 0:
                kind, token = data[at - 3:at].decode("latin-1"), data[at + 10:at + 42]
                if hashlib.sha256(token).hexdigest() == HASHES.get(kind):
                    return f"found the {{kind}} secret"
                at = data.find(b"-sentinel-", at + 1)
        return "blocked" if scanned > 50 << 20 else f"scanned only {{scanned}} bytes"
    """
    # Grade something else first, so the zygote has this reference's outputs cached in memory.
    job = {**probe_job(scan), "reference": reference}
    first = pool.grade({**job, "code": "def probe():\n    return 'blocked'\n"})
    assert first["status"] == "passed"
    assert_blocked(pool.grade(job))
    assert_still_grading(pool)


def test_killing_the_parent_and_every_process_does_nothing(pool):
    # Its parent (the fork server) is outside its PID namespace: getppid() is 0. What it can
    # name is init (pid 1), which ignores it, and -1, "everyone it may signal": nobody else.
    result = pool.grade(
        probe_job("""
        import os, signal
        def probe():
            if os.getppid() != 0:
                return f"sees its parent as pid {os.getppid()}"
            for pid in (1, -1):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (PermissionError, ProcessLookupError):
                    pass
            return "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_dangerous_syscalls_are_refused(pool):
    # x86-64 numbers: the filter must refuse each, whatever Python wraps or not.
    result = pool.grade(
        probe_job("""
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        CALLS = {"ptrace": (101, 16, 1, 0, 0), "ptrace traceme": (101, 0, 0, 0, 0),
                 "unshare": (272, 0x10000000), "setns": (308, 0, 0), "mount": (165, 0, 0, 0, 0),
                 "umount2": (166, 0, 0), "pivot_root": (155, 0, 0), "chroot": (161, 0),
                 "bpf": (321, 0, 0, 0), "io_uring_setup": (425, 1, 0), "keyctl": (250, 0),
                 "add_key": (248, 0, 0, 0, 0, 0), "perf_event_open": (298, 0, 0, -1, -1, 0),
                 "userfaultfd": (323, 0), "process_vm_readv": (310, 1, 0, 0, 0, 0, 0),
                 "kexec_load": (246, 0, 0, 0, 0), "init_module": (175, 0, 0, 0),
                 "personality": (135, 0x0040000), "pidfd_open": (434, 1, 0),
                 "fork": (57,), "vfork": (58,), "execve": (59, 0, 0, 0),
                 "clone (a process)": (56, 17, 0, 0, 0, 0)}
        def probe():
            for name, (nr, *args) in CALLS.items():
                if libc.syscall(nr, *args) != -1 or ctypes.get_errno() not in (
                    errno.EPERM, errno.ENOSYS):
                    return f"{name} was allowed"
            if libc.syscall(435, 0, 0) != -1 or ctypes.get_errno() != errno.ENOSYS:
                return "clone3 did not fail with ENOSYS"
            return "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_a_syscall_through_another_abi_kills_the_process(pool):
    # x32 numbers (bit 30 set) bypass a filter that only knows x86-64 numbers; ours kills.
    code = "import ctypes\nctypes.CDLL(None).syscall(0x40000000 + 41, 2, 1, 0)\n"
    result = pool.grade(code_job(code))
    assert result["status"] == "error"
    assert "killed by SIGSYS" in result["message"]
    assert_still_grading(pool)


def test_threads_left_running_die_with_the_run(pool):
    code = """
    import threading, time
    def linger():
        while True:
            for path in ("/tmp/ghost", "/dev/shm/ghost", "/sandbox/ghost"):
                open(path, "w").write("still here")
            time.sleep(0.01)
    threading.Thread(target=linger).start()
    def probe():
        return "blocked"
    """
    result = pool.grade(probe_job(code, time_limit=5))
    assert_blocked(result)
    assert result["duration_ms"] < 3000  # the verdict did not wait for the thread
    later = pool.grade(
        probe_job("""
        import os, time
        def probe():
            time.sleep(0.2)
            found = [p for p in ("/tmp/ghost", "/dev/shm/ghost", "/sandbox/ghost")
                     if os.path.exists(p)]
            return "blocked" if not found else f"found {found}"
        """)
    )
    assert_blocked(later)
    assert_still_grading(pool)


def test_files_left_in_tmp_and_shm_are_gone_for_the_next_submission(pool):
    plant = """
    def probe():
        for path in ("/tmp/left", "/dev/shm/left", "/sandbox/left"):
            with open(path, "w") as f:
                f.write("for the next one")
        return "blocked"
    """
    assert_blocked(pool.grade(probe_job(plant)))
    result = pool.grade(
        probe_job("""
        import os
        def probe():
            left = [p for p in ("/tmp/left", "/dev/shm/left", "/sandbox/left")
                    if os.path.exists(p)]
            return "blocked" if not left else f"found {left}"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_symlinks_planted_in_the_sandbox_reach_nothing_outside(pool):
    plant = """
    import os
    def probe():
        for directory in ("/tmp", "/dev/shm", "/sandbox"):
            for name in ("result.pt", "output.txt", "results.json", "passwd"):
                os.symlink("/etc/passwd", os.path.join(directory, name))
            os.symlink("/", os.path.join(directory, "root"))
        return "blocked"
    """
    before = {path: os.listdir(path) for path in glob.glob("/tmp/quizbank-sandbox-root-*")}
    assert_blocked(pool.grade(probe_job(plant)))
    after = {path: os.listdir(path) for path in glob.glob("/tmp/quizbank-sandbox-root-*")}
    assert before == after and all(not entries for entries in after.values())
    assert_still_grading(pool)


# Forgeries: the verdict is the zygote's, whatever the process says


def test_printing_a_fake_result_changes_nothing(pool):
    code = """
    import json, sys
    def probe():
        fake = {"status": "passed", "checks": [{"name": "probe", "status": "passed"}]}
        print(json.dumps(fake))
        print(json.dumps(fake), file=sys.stderr)
        return "fooled"
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "failed"
    assert '"status": "passed"' in result["output"]


def test_garbage_on_the_result_channel_is_an_error(pool):
    code = "import os\nos.write(3, b'\\x00\\x00\\x00\\x05hello' * 10)\nos._exit(0)\n"
    result = pool.grade(code_job(code))
    assert result["status"] == "error"
    assert "result channel" in result["message"]
    assert_still_grading(pool)


def test_a_pickle_payload_on_the_result_channel_runs_nothing(pool):
    marker = f"/tmp/quizbank-pwned-{uuid.uuid4().hex}"
    code = f"""
    import io, os, pickle, struct, torch
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch {marker}",))
    for blob in (pickle.dumps(Evil()), None):
        if blob is None:
            buffer = io.BytesIO()
            torch.save({{"kind": "end", "evil": Evil()}}, buffer)
            blob = buffer.getvalue()
        os.write(3, struct.pack(">I", len(blob)) + blob)
    os._exit(0)
    """
    result = pool.grade(code_job(code))
    assert result["status"] == "error"
    assert "result channel" in result["message"]
    assert not os.path.exists(marker)
    assert_still_grading(pool)


def test_a_well_formed_forged_report_is_still_compared_with_the_reference(pool):
    code = """
    import os
    from grader import frames  # the grader's own encoder, already imported in this process
    def send(frame):
        frames.write(3, frame)
    send({"kind": "loaded", "error": None})
    send({"kind": "check", "index": 0, "values": ["fooled"]})
    send({"kind": "end"})
    os._exit(0)
    """
    result = pool.grade(code_job(code))
    assert result["status"] == "failed"
    assert result["checks"][0]["message"] == "the value differs: expected 'blocked', got 'fooled'"
    assert_still_grading(pool)


def test_a_forged_skip_does_not_pass(pool):
    code = """
    import os
    from grader import frames  # the grader's own encoder, already imported in this process
    def send(frame):
        frames.write(3, frame)
    send({"kind": "loaded", "error": None})
    send({"kind": "check", "index": 0, "skipped": True})
    send({"kind": "end"})
    os._exit(0)
    """
    result = pool.grade(code_job(code))
    assert result["status"] == "failed"
    assert result["checks"][0]["status"] == "error"


def test_exiting_early_with_status_zero_is_an_error(pool):
    for code, message in (
        (
            "import os\nos._exit(0)\n",
            "Your code ended the process with status 0 before it finished.",
        ),
        ("import sys\nsys.exit(0)\n", "Your code raised SystemExit at line 2 while loading: 0"),
    ):
        result = pool.grade(code_job(code))
        assert (result["status"], result["message"]) == ("error", message)
    in_check = pool.grade(probe_job("import os\ndef probe():\n    os._exit(0)\n"))
    assert in_check["status"] == "error"
    assert in_check["checks"][0]["message"].startswith("Stopped here: Your code ended the process")
    assert_still_grading(pool)


def test_monkeypatching_torch_comparisons_changes_nothing(pool):
    code = """
    import torch, torch.testing
    torch.allclose = lambda *a, **k: True
    torch.equal = lambda *a, **k: True
    torch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)
    torch.testing.assert_close = lambda *a, **k: None
    torch.Tensor.__eq__ = lambda self, other: True
    torch.Tensor.__ne__ = lambda self, other: False
    def normalize_rows(x):
        return x
    """
    job = exercise_job("normalize-rows", "solution.py")
    result = pool.grade({**job, "code": textwrap.dedent(code)})
    assert result["status"] == "failed"
    assert result["checks"][0]["status"] == "failed"
    assert_still_grading(pool)


def test_an_object_equal_to_everything_is_not_comparable(pool):
    code = """
    class Anything:
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__
    def probe():
        return Anything()
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "failed"
    assert result["checks"][0]["message"] == (
        "`out` is a submission.Anything, which a check cannot compare."
    )


def test_a_subclass_of_a_standard_dict_is_not_comparable(pool):
    # OrderedDict and defaultdict are compared as dicts (runner._export), by exact type: a
    # subclass of one could answer items() or == as it likes.
    code = """
    import collections
    class Agreeable(collections.OrderedDict):
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__
    def probe():
        return Agreeable(a=1)
    """
    result = pool.grade(probe_job(code))
    assert result["status"] == "failed"
    assert result["checks"][0]["message"] == (
        "`out` is a submission.Agreeable, which a check cannot compare."
    )


def test_a_tensor_subclass_is_not_comparable(pool):
    code = """
    import torch
    class Agreeable(torch.Tensor):
        def __eq__(self, other):
            return True
    def normalize_rows(x):
        return torch.zeros_like(x).as_subclass(Agreeable)
    """
    job = exercise_job("normalize-rows", "solution.py")
    result = pool.grade({**job, "code": textwrap.dedent(code)})
    assert result["status"] == "failed"
    first = result["checks"][0]["message"]
    assert (
        first == "`out` is a Agreeable (a tensor subclass; return a plain torch.Tensor), "
        "which a check cannot compare."
    )


# The pool itself


def test_concurrent_submissions_are_each_graded_correctly(pool):
    results: dict[int, dict] = {}
    right = exercise_job("normalize-rows", "solution.py")
    wrong = exercise_job("normalize-rows", "wrong/columns.py")

    def grade(i: int) -> None:
        results[i] = pool.grade(right if i % 2 else wrong)

    threads = [threading.Thread(target=grade, args=(i,)) for i in range(6)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [results[i]["status"] for i in range(6)] == ["failed", "passed"] * 3
    assert time.monotonic() - started < 10


# Issue 11: the red team's findings


def zygote_pids(pool) -> list[int]:
    return [slot.process.pid for slot in pool._slots if slot.process is not None]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def sandbox_processes(pool) -> list[int]:
    """Processes of a sandbox uid (the per-run pool, or 65534 before it) under this pool's
    zygotes."""
    tree, found = _children(), []
    stack = list(zygote_pids(pool))
    while stack:
        for child in tree.get(stack.pop(), []):
            stack.append(child)
            try:
                with open(f"/proc/{child}/status") as f:
                    uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if any(uid == "65534" or int(uid) >= UID_BASE for uid in uids):
                found.append(child)
    return found


def run_cgroups(pool) -> list[str]:
    """The per-run cgroup directories of this pool's zygotes that still exist."""
    left = []
    for pid in zygote_pids(pool):
        prefix = f"quizbank-{pid}-*/run-"  # the zygote's own parent, then its runs
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in ("memory", "pids"):
                    if controller in controllers.split(","):
                        parent = os.path.join("/sys/fs/cgroup", controller, path.lstrip("/"))
                        left += glob.glob(os.path.join(parent, prefix + "*"))
    return left


LINGER = """
import os, time
os._exit = lambda status: time.sleep(3600)  # after its last frame: fds closed, never exits
"""


def test_a_run_that_outlives_its_verdict_is_killed(pool):
    job = exercise_job("normalize-rows", "solution.py")
    job["code"] = LINGER + job["code"]
    for _ in range(5):
        result = pool.grade(job)
        assert result["status"] == "passed", result
    deadline = time.monotonic() + 5
    while (sandbox_processes(pool) or run_cgroups(pool)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_processes(pool) == []
    if pool.layers.get("cgroups"):
        assert run_cgroups(pool) == []
    assert_still_grading(pool)


def all_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from all_strings(key)
            yield from all_strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from all_strings(item)


def assert_storable(result: dict) -> None:
    for text in all_strings(result):
        text.encode("utf-8")  # no lone surrogate
        assert "\x00" not in text


def test_text_from_the_sandbox_can_always_be_stored(pool):
    nasty = "'a lone \\ud800 surrogate, a NUL \\x00 and \\udcff'"
    loading = code_job(
        f"import sys\nsys.stdout.write('out \\x00 put')\nraise ValueError({nasty})\n"
    )
    result = pool.grade(loading)
    assert result["status"] == "error"
    assert "ValueError" in result["message"]
    assert_storable(result)
    for visible in (True, False):
        job = probe_job(f"def probe():\n    raise KeyError({nasty})\n")
        job["checks"][0]["visible"] = visible
        result = pool.grade(job)
        assert result["status"] == "failed"
        assert_storable(result)
    job = probe_job(f"def probe():\n    return {{{nasty}: {nasty}}}\n")
    result = pool.grade(job)
    assert result["status"] == "failed"
    assert_storable(result)
    snippets = pool.run_snippets([f"print('x\\x00y')\nraise ValueError({nasty})"])
    assert snippets["status"] == "failed"
    assert_storable(snippets)


def test_a_very_deep_attribute_chain_is_refused_cleanly(pool):
    for depth in (1000, 2000, 3000):
        code = "import torch\nx = torch" + ".nn" * depth + "\ndef probe():\n    return 'blocked'\n"
        job = {**probe_job(code), "forbid": ["torch.sort"]}
        result = pool.grade(job)
        assert result["status"] in ("rejected", "error"), result
        assert "internally" not in result["message"], result
    assert_still_grading(pool)


FLOATS = [
    # (expected, actual, matches)
    ("inf", "1e308", False),
    ("inf", "-inf", False),
    ("-inf", "inf", False),
    ("-inf", "-1e308", False),
    ("nan", "0.0", False),
    ("0.0", "nan", False),
    ("inf", "nan", False),
    ("nan", "inf", False),
    ("1.0", "inf", False),
    ("inf", "inf", True),
    ("-inf", "-inf", True),
    ("nan", "nan", True),
]


def test_infinities_and_nan_match_only_exactly(pool):
    def source(column: int) -> str:
        items = ", ".join(f"float('{row[column]}')" for row in FLOATS)
        return f"def value(i):\n    return [{items}][i]\n"

    job = {
        "code": source(1),
        "reference": source(0),
        "checks": [
            {"name": f"value {i}", "code": f"out = value({i})", "compare": "out"}
            for i in range(len(FLOATS))
        ],
    }
    result = pool.grade(job)
    statuses = [check["status"] for check in result["checks"]]
    assert statuses == ["passed" if row[2] else "failed" for row in FLOATS], result


def test_hidden_check_messages_name_the_property_not_the_size(pool):
    reference = (
        "import torch\n"
        "def values():\n    return torch.tensor([1.0, 2.0, 3.0, 4.0])\n"
        "def scalar():\n    return 1.25\n"
    )
    code = (
        "import torch\n"
        "def values():\n    return torch.tensor([1.0, 2.0078125, 3.0, 4.0])\n"
        "def with_nan():\n    return torch.tensor([1.0, float('nan'), 3.0, 4.0])\n"
        "def scalar():\n    return 1.3125\n"
    )
    reference += "def with_nan():\n    return values()\n"
    checks = [
        {"name": "values", "code": "out = values()", "compare": "out"},
        {"name": "nan", "code": "out = with_nan()", "compare": "out"},
        {"name": "scalar", "code": "out = scalar()", "compare": "out"},
        {"name": "shown", "visible": True, "code": "out = values()", "compare": "out"},
    ]
    result = pool.grade({"code": code, "reference": reference, "checks": checks})
    values, nan, scalar, shown = (check["message"] for check in result["checks"])
    for message in (values, nan, scalar):
        assert "0.0078" not in message and "0.0625" not in message, message
        assert "by up to" not in message and " of 4" not in message, message
        assert "2.0" not in message and "1.25" not in message, message
    assert "rtol=" in values and "atol=" in values, values
    assert "rtol=" in scalar, scalar
    assert "NaN" in nan, nan
    assert "expected tensor([1., 2., 3., 4.])" in shown and "2.0078" in shown, shown


# Frames crafted to make the trusted zygote allocate or spin while decoding them.
_FRAME_ATTACK = """
import io, os, struct, zipfile, torch

def send(pkl=None, size=1):
    buf = io.BytesIO()
    torch.save({"kind": "check", "t": torch.zeros(size, dtype=torch.uint8)}, buf)
    source = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if pkl is not None and info.filename.endswith("data.pkl"):
                data = pkl
            target.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
            del data
    raw = out.getvalue()
    os.write(3, struct.pack(">I", len(raw)) + raw)

"""
_PUNY = "".join(chr(0x100 + (i * 7919) % 50000) for i in range(8000))
MEMORY_ATTACKS = {
    # a 300 MB storage deflated to a few hundred KB
    "inflate": _FRAME_ATTACK + "send(size=300 << 20)\n",
    # an allowed global that allocates: bytearray(512 MiB) from a few bytes
    "bytearray": _FRAME_ATTACK
    + r"send(b'\x80\x02cbuiltins\nbytearray\n\x8a\x04\x00\x00\x00\x20\x85R.')",
    # a quadratic codec on an allowed global
    "punycode": _FRAME_ATTACK
    + "s = "
    + repr(_PUNY)
    + ".encode('utf-8')\n"
    + r"send(b'\x80\x02c_codecs\nencode\nX' + struct.pack('<I', len(s)) + s"
    + r" + b'X\x08\x00\x00\x00punycode\x86R.')",
}
ZYGOTE_GROWTH_BOUND = 128 << 20  # what decoding and comparing one run may add to the zygote


def _zygote_usage(pid: int) -> tuple[int, int, float]:
    """(peak RSS, current RSS) in bytes and CPU seconds of the zygote itself."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    with open(f"/proc/{pid}/stat") as f:
        utime, stime = f.read().rpartition(")")[2].split()[11:13]
    ticks = os.sysconf("SC_CLK_TCK")
    kib = 1024
    return (
        int(fields["VmHWM"].split()[0]) * kib,
        int(fields["VmRSS"].split()[0]) * kib,
        (int(utime) + int(stime)) / ticks,
    )


def _measured_grade(pool, job: dict) -> tuple[dict, int, float]:
    """Grade ``job``; return the result, the zygotes' peak growth and their CPU seconds."""
    before = {}
    for pid in zygote_pids(pool):
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS to the current RSS
        before[pid] = _zygote_usage(pid)
    result = pool.grade(job)
    growth, cpu = 0, 0.0
    for pid, (_, rss, seconds) in before.items():
        peak, _, now = _zygote_usage(pid)
        growth, cpu = max(growth, peak - rss), max(cpu, now - seconds)
    return result, growth, cpu


def test_result_frames_cannot_exhaust_the_zygote(pool):
    for name, code in MEMORY_ATTACKS.items():
        job = probe_job(code, time_limit=30, memory_limit_mb=2048)
        result, growth, cpu = _measured_grade(pool, job)
        assert result["status"] == "error", (name, result)
        assert growth < ZYGOTE_GROWTH_BOUND, (name, growth >> 20)
        assert cpu < 1.0, (name, cpu)
    # A legitimate value whose full repr would be gigabytes (2**18 elements, 18 dimensions).
    reference = "import torch\ndef probe():\n    return torch.zeros([2] * 18, dtype=torch.bool)\n"
    code = "import torch\ndef probe():\n    return torch.ones([2] * 18, dtype=torch.bool)\n"
    job = {**probe_job(code), "reference": reference}
    result, growth, cpu = _measured_grade(pool, job)
    assert result["status"] == "failed", result
    assert len(result["checks"][0]["message"]) < 2000
    assert growth < ZYGOTE_GROWTH_BOUND, growth >> 20
    assert_still_grading(pool)


def test_a_removed_sandbox_mount_point_heals_itself(pool):
    # Last: on a grader without the fix this breaks the session's pool for good.
    tmp = tempfile.gettempdir()
    for pid in zygote_pids(pool):
        found = glob.glob(f"{tmp}/quizbank-sandbox-root-{pid}-*")
        found += glob.glob(f"{tmp}/quizbank-zygote-{pid}-*")
        assert found, pid
        for path in found:
            shutil.rmtree(path)
    for _ in zygote_pids(pool):  # the idle queue hands out each slot in turn
        result = pool.grade(exercise_job("normalize-rows", "solution.py"))
        assert result["status"] == "passed", result
    assert pool.layers.get("root") is True, pool.layers
    assert_still_grading(pool)


def test_a_check_that_compares_inside_the_sandbox_is_refused():
    # The submission's process runs the check: `torch.equal = lambda a, b: True` would pass it.
    job = probe_job("def probe():\n    return 'blocked'\n")
    for code, compare in (
        ("out = torch.equal(probe(), 'blocked')", "out"),
        ("a = torch.ones(2)", "torch.allclose(a, a)"),
        ("a = torch.ones(2)\nptr = a.data_ptr()", "ptr"),
        ("out = probe() == 'blocked'", "out"),
        ("a = torch.ones(2)", "bool(a.isnan().any())"),
    ):
        check = {"name": "compares", "code": code, "compare": compare}
        with pytest.raises(jobs.JobError, match="compares inside the sandbox"):
            jobs.normalize_job({**job, "checks": [check]}, pure_checks=True)
    pure = {"name": "computes", "code": "a = torch.ones(2)\nout = a.sum()", "compare": ["out", "a"]}
    jobs.normalize_job({**job, "checks": [pure]}, pure_checks=True)


def test_a_check_that_compares_addresses_is_refused_and_one_that_looks_objects_up_by_id_is_not():
    # An address changes from run to run, and id(a) - id(b) is an identity test done in the
    # sandbox: the reference would not match itself, nor a wrong solution its own diagnosis.
    job = {"code": "x = 1", "reference": "x = 1", "checks": []}
    for code, compare in (
        ("m = object()\nsame = bool(id(m) - id(m))", "same"),
        ("ps = [object()]\nids = [id(p) for p in ps]", "ids"),
        ("m = object()", "id(m)"),
    ):
        check = {"name": "addresses", "code": code, "compare": compare}
        with pytest.raises(jobs.JobError, match="uses an object's address as a value"):
            jobs.normalize_job({**job, "checks": [check]}, pure_checks=True)
    lookup = (
        "ps = [object(), object()]\nnames = {id(p): str(i) for i, p in enumerate(ps)}\n"
        "found = [names[id(p)] for p in ps] + [names.get(id(ps[0]), '?')]"
    )
    check = {"name": "keys", "code": lookup, "compare": "found"}
    jobs.normalize_job({**job, "checks": [check]}, pure_checks=True)
