"""The single-use slot (GPU queue): a fresh interpreter per run, isolated the same way.

Without a GPU it runs on the CPU and skips checks that need CUDA, so it is tested here too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grader import SandboxPool
from grader.tests.helpers import GRADER_PYTHON, exercise_job


@pytest.fixture(scope="module")
def gpu_pool() -> Iterator[SandboxPool]:
    with SandboxPool(GRADER_PYTHON, slots=1, kind="gpu") as pool:
        yield pool


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
