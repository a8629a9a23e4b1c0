"""The single-use slot (GPU queue): a fresh interpreter per run, isolated the same way.

Without a GPU it runs on the CPU and skips checks that need CUDA, so it is tested here too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from grader import SandboxPool
from grader.tests.helpers import GRADER_PYTHON, exercise_job, grader_torch_has_cuda, probe_job


@pytest.fixture(scope="module")
def gpu_pool() -> Iterator[SandboxPool]:
    with SandboxPool(GRADER_PYTHON, slots=1, kind="gpu") as pool:
        yield pool


def test_a_gpu_pool_says_whether_its_runs_really_have_cuda(gpu_pool):
    """devices="auto" is no promise: the pool asks a single-use process, which initialises CUDA
    as every run does, and says why not where it cannot (the zygote itself never does)."""
    assert gpu_pool.cuda is grader_torch_has_cuda()
    assert gpu_pool.cuda_detail
    if not gpu_pool.cuda:
        assert "not a CUDA build" in gpu_pool.cuda_detail or "no usable" in gpu_pool.cuda_detail


def test_a_single_use_process_grades_like_a_forked_one(gpu_pool):
    result = gpu_pool.grade(exercise_job("normalize-rows", "solution.py"))
    assert result["status"] == "passed"
    assert result["skipped"] == (0 if result["checks"][-1]["status"] == "passed" else 1)


def test_without_rlimit_as_the_memory_cgroup_stops_a_memory_bomb(gpu_pool):
    job = exercise_job("normalize-rows", "solution.py")
    code = """
import torch
def normalize_rows(x):
    hog = torch.ones(1 << 30)  # 4 GiB, written, with a 256 MB limit
    return x
"""
    result = gpu_pool.grade({**job, "code": code, "memory_limit_mb": 256})
    assert result["status"] == "out_of_memory"
    assert result["message"] == "Your code used more than the memory limit of 256 MB."


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rpartition(")")[2].split()[1])  # the parent's pid
        except (OSError, ValueError, IndexError):
            return False
    return False


def single_use_processes(zygote: int) -> set[int]:
    """Host pids of the zygote's single-use interpreters (spare or running a job)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        if b"grader.single_use" in command and _descends_from(int(entry), zygote):
            found.add(int(entry))
    return found


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


CUDA_CHECK = {
    "name": "runs on the GPU",
    "visible": True,
    "code": "out = double(torch.ones(3, device='cuda'))",
    "compare": "out",
    "requires": "cuda",
}


def test_the_single_use_slot_lifecycle_runs_without_cuda():
    """Spawn, warm, isolate, run one job, exit, replace: all of the GPU queue's slot but CUDA,
    with the fake (empty) device list, so CI exercises it on any machine."""
    job = probe_job(
        "import os\ndef probe():\n    return 'blocked' if os.getpid() == 2 else 'host'\n"
    )
    job["code"] += "\ndef double(x):\n    return x * 2\n"
    job["reference"] += "\ndef double(x):\n    return x * 2\n"
    job["checks"].append(CUDA_CHECK)
    with SandboxPool(GRADER_PYTHON, slots=1, kind="gpu", devices="none") as pool:
        zygote = pool._slots[0].process.pid
        assert pool.cuda is False
        assert pool.cuda_detail == "the device list is empty (GRADER_GPU_DEVICES=none)"
        wait_for(lambda: len(single_use_processes(zygote)) == 1, "a spare process to spawn")
        (spare,) = single_use_processes(zygote)
        for _ in range(2):
            result = pool.grade(job)
            # isolated: pid 2 of a PID namespace of its own; the CUDA check skipped, and said so
            assert result["status"] == "passed", result
            assert [c["status"] for c in result["checks"]] == ["passed", "skipped"]
            assert result["skipped"] == 1
            # the process that ran the job exited; a fresh one warms for the next job
            wait_for(lambda s=spare: not os.path.exists(f"/proc/{s}"), "the used process to exit")
            wait_for(lambda: len(single_use_processes(zygote)) == 1, "a replacement")
            (replacement,) = single_use_processes(zygote)
            assert replacement != spare
            spare = replacement
    assert not os.path.exists(f"/proc/{zygote}")
    # the spare dies with its PID namespace (its init goes with the zygote), and is reaped
    wait_for(lambda: not os.path.exists(f"/proc/{spare}"), "no leftover process", 10)


def test_a_single_use_process_is_isolated_like_a_forked_one(gpu_pool):
    """Its namespaces are entered before torch starts (single_use.py); the sandbox is the same."""
    result = gpu_pool.grade(
        probe_job("""
        import os, socket
        def probe():
            if os.getpid() != 2 or os.path.exists("/home") or os.getuid() < 0x40000000:
                return "not in the sandbox"
            if os.uname().nodename != "sandbox" or os.path.exists("/sys"):
                return "the host's name or /sys"
            for task in os.listdir("/proc/self/task"):
                if sorted(os.listdir(f"/proc/self/task/{task}/root")) != sorted(os.listdir("/")):
                    return f"thread {task} sees another root"
            try:
                socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            except PermissionError:
                return "blocked"
            return "made a socket"
        """)
    )
    assert result["status"] == "passed", result


def test_without_prespawning_the_process_asked_about_cuda_does_not_stay():
    with SandboxPool(GRADER_PYTHON, slots=1, kind="gpu", prespawn=False) as pool:
        zygote = pool._slots[0].process.pid
        assert pool.cuda is grader_torch_has_cuda()
        wait_for(lambda: not single_use_processes(zygote), "the asked process to go", 10)
        result = pool.grade(exercise_job("normalize-rows", "solution.py"))
        assert result["status"] == "passed", result
        wait_for(lambda: not single_use_processes(zygote), "no process kept warm", 10)
