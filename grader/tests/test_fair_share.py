"""Issue 13, finding 8: a run holds no more than its share of the machine, and its limit can be
fitted to the exercise. A worker runs more slots than cores, so each run gets a cpu cgroup of its
own (equal weight, at most one core), and the grader reports the reference's measured time."""

from __future__ import annotations

import glob
import os
import threading
import time

import pytest

from grader import limits
from grader.tests.helpers import assert_still_grading, code_job, exercise_job


def cpu_cgroups(pool) -> list[str]:
    """The per-run cpu cgroup directories of this pool's zygotes that exist now."""
    found = []
    for slot in pool._slots:
        if slot.process is None:
            continue
        with open(f"/proc/{slot.process.pid}/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "cpu" in controllers.split(","):
                    parent = os.path.join("/sys/fs/cgroup/cpu", path.lstrip("/"))
                    found += glob.glob(
                        os.path.join(parent, f"quizbank-{slot.process.pid}-*", "run-*")
                    )
    return found


def read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def test_a_run_gets_one_cores_quota_and_an_equal_weight(pool):
    if not pool.layers.get("cpu"):
        pytest.skip("no writable cgroup v1 cpu controller here: the layer reports inactive")
    result: dict = {}
    sleeper = code_job("import time\ntime.sleep(30)\n", time_limit=3)
    thread = threading.Thread(target=lambda: result.update(pool.grade(sleeper)))
    thread.start()
    members: list[tuple[str, str, str, str]] = []
    deadline = time.monotonic() + 20
    while not members and time.monotonic() < deadline:
        for group in cpu_cgroups(pool):
            try:
                procs = read(os.path.join(group, "cgroup.procs"))
                if procs:
                    members.append(
                        (
                            procs,
                            read(os.path.join(group, "cpu.shares")),
                            read(os.path.join(group, "cpu.cfs_quota_us")),
                            read(os.path.join(group, "cpu.cfs_period_us")),
                        )
                    )
            except FileNotFoundError:  # a run ended between the listing and the read
                continue
        time.sleep(0.05)
    thread.join()
    assert result["status"] == "timed_out", result
    assert members, "no run was ever seen in a cpu cgroup of its own"
    _, shares, quota, period = members[0]
    assert int(shares) == 1024
    assert int(quota) == int(period)  # one core, whatever threads the run starts
    deadline = time.monotonic() + 5
    while cpu_cgroups(pool) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cpu_cgroups(pool) == []  # removed with the run, like its memory and pids cgroups
    assert_still_grading(pool)


def test_a_verdict_reports_the_reference_run_time(pool):
    result = pool.grade(exercise_job("normalize-rows", "solution.py"))
    assert result["status"] == "passed", result
    assert isinstance(result["reference_ms"], int)
    assert 0 < result["reference_ms"] < 10_000  # a real measurement, from the cached run


def test_the_fitted_limit_is_a_multiple_of_the_reference_with_a_floor_and_a_ceiling():
    assert limits.fitted_time_limit(None, 10.0) == 10.0  # not measured: the exercise's own
    assert limits.fitted_time_limit(0.05, 10.0) == limits.TIME_LIMIT_FLOOR
    assert limits.fitted_time_limit(0.62, 10.0) == pytest.approx(
        limits.TIME_LIMIT_FACTOR * 0.62, abs=0.1
    )
    assert limits.fitted_time_limit(5.0, 10.0) == 10.0  # never past the ceiling
    assert limits.fitted_time_limit(0.05, 2.0) == 2.0  # nor past a ceiling below the floor
