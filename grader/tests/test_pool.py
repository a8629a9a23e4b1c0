"""The client pool: how zygotes start, and what happens when one dies or stops answering."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator

import pytest

from grader import SandboxPool
from grader.client import GRADER_FAILED, ZYGOTE_ENV
from grader.tests.helpers import GRADER_PYTHON, exercise_job, probe_job


@pytest.fixture(scope="module")
def own_pool() -> Iterator[SandboxPool]:
    """A one-slot pool these tests may break without disturbing the session's pool."""
    with SandboxPool(GRADER_PYTHON, slots=1, grace=1) as pool:
        yield pool


def zygote_pid(pool: SandboxPool) -> int:
    process = pool._slots[0].process
    assert process is not None
    return process.pid


def zygote_root(pid: int) -> str:
    """The zygote's private temp directory (its sandboxes' mount point is in it)."""
    (found,) = glob.glob(f"{tempfile.gettempdir()}/quizbank-zygote-{pid}-*")
    return found


def test_the_zygote_is_a_fresh_process_with_an_empty_environment(own_pool):
    pid = zygote_pid(own_pool)
    with open(f"/proc/{pid}/environ", "rb") as f:
        names = {entry.split(b"=", 1)[0].decode() for entry in f.read().split(b"\0") if entry}
    assert names == set(ZYGOTE_ENV)
    assert os.getsid(pid) == pid  # a session of its own
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert b"grader.zygote" in f.read()
    # stdio (0-2), the two protocol pipes, the fork server socket and its own pid namespace fd
    # at most: nothing inherited from the test process.
    assert len(os.listdir(f"/proc/{pid}/fd")) <= 7


def test_the_pools_log_is_what_its_zygotes_wrote_to_stderr(own_pool):
    marker = "a line on the zygote's stderr"
    with open(f"/proc/{zygote_pid(own_pool)}/fd/2", "a") as stderr:
        stderr.write(marker + "\n")
    assert own_pool.log_tail().endswith(marker)


def test_a_zygote_killed_during_a_job_is_replaced_and_the_job_retried(own_pool):
    # An infrastructure failure is not the learner's verdict: the job runs again on a new zygote.
    old = zygote_pid(own_pool)
    threading.Timer(0.5, os.kill, (old, signal.SIGKILL)).start()
    result = own_pool.grade(
        probe_job("import time\ndef probe():\n    time.sleep(1)\n    return 'blocked'\n")
    )
    assert result["status"] == "passed"
    assert "grader_failed" not in result
    assert zygote_pid(own_pool) != old


def test_a_grader_that_keeps_failing_is_reported_as_the_graders_fault(own_pool):
    killed: set[int] = set()
    stop = threading.Event()

    def kill_every_zygote() -> None:  # each fresh zygote dies as soon as it has the job
        while not stop.is_set():
            process = own_pool._slots[0].process
            if process is not None and process.pid not in killed:
                time.sleep(0.3)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                killed.add(process.pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_every_zygote)
    killer.start()
    try:
        result = own_pool.grade(probe_job("import time\ndef probe():\n    time.sleep(30)\n"))
    finally:
        stop.set()
        killer.join()
    assert result["status"] == "error" and result["grader_failed"] is True
    assert result["message"] == GRADER_FAILED
    assert len(killed) >= 2  # the first zygote, and the fresh one the job was retried on
    assert own_pool.grade(exercise_job("normalize-rows", "solution.py"))["status"] == "passed"


def test_a_killed_zygote_leaves_no_temp_directory_behind(own_pool):
    killed = zygote_pid(own_pool)
    root = zygote_root(killed)
    assert os.path.isdir(os.path.join(root, "root"))
    os.kill(killed, signal.SIGKILL)  # it cannot remove its own directory now
    result = own_pool.grade(exercise_job("normalize-rows", "solution.py"))
    assert result["status"] == "passed"
    assert zygote_pid(own_pool) != killed
    assert not os.path.exists(root)
    assert os.path.isdir(zygote_root(zygote_pid(own_pool)))  # the fresh zygote's own


def test_a_sandbox_that_cannot_start_is_retried_on_a_fresh_zygote(own_pool):
    # The zygote cannot make its sandboxes' mount point (something took its place): nothing of
    # the job can run there, which is the grader's failure, not the learner's verdict.
    broken = zygote_pid(own_pool)
    root = zygote_root(broken)
    mount_point = os.path.join(root, "root")
    os.rmdir(mount_point)
    with open(mount_point, "w") as planted:
        planted.write("not a directory")
    try:
        result = own_pool.grade(exercise_job("normalize-rows", "solution.py"))
    finally:
        os.remove(mount_point)
        os.rmdir(root)
    assert result["status"] == "passed", result
    assert "grader_failed" not in result
    assert zygote_pid(own_pool) != broken


def test_a_wedged_zygote_is_killed_and_the_job_retried_on_a_fresh_one(own_pool):
    wedged = zygote_pid(own_pool)
    os.kill(wedged, signal.SIGSTOP)
    result = own_pool.grade(probe_job("def probe():\n    return 'blocked'\n", time_limit=0.5))
    assert result["status"] == "passed"
    assert zygote_pid(own_pool) != wedged
    assert not os.path.exists(f"/proc/{wedged}")  # killed and reaped, not left stopped


def test_a_closed_pool_refuses_work():
    # A GPU-kind pool without a spare process starts quickest: its zygote only imports torch.
    pool = SandboxPool(GRADER_PYTHON, slots=1, kind="gpu", prespawn=False)
    pid = zygote_pid(pool)
    with pool:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        pool.grade(exercise_job("normalize-rows", "solution.py"))
    assert not os.path.exists(f"/proc/{pid}")  # stopped and reaped


def test_a_missing_interpreter_fails_loudly():
    with pytest.raises(OSError):
        SandboxPool("/nonexistent/python", slots=1)
