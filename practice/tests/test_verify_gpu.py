"""`manage.py verify_gpu` (`make verify-gpu`): it must never pass where CUDA is absent, and says
why. On a machine with a GPU it grades the GPU-queue exercises; that run is not part of CI, so
the command's own logic is tested here against pools that claim a device, and end to end on the
CPU with --without-cuda."""

import time
from typing import Any

import pytest
from django.core.management import call_command

from grader import jobs
from grader.limits import MAX_TIME_LIMIT
from grader.tests.helpers import grader_torch_has_cuda
from practice.management.commands import verify_gpu
from quizbank.tests.factories import ExerciseFactory, QuestionFactory

pytestmark = pytest.mark.django_db

CUDA_ANSWER = (
    "On the CPU:\n\n```python\nimport torch\nx = torch.ones(2)\n```\n\n"
    "On a GPU:\n\n```python cuda\ny = x.cuda() * 2\n```\n\n"
    "Not run:\n\n```python cuda norun\nimport triton\n```\n"
)


def test_without_a_cuda_device_it_exits_non_zero_and_says_so(settings, capsys):
    settings.GRADER_GPU_DEVICES = "none"  # the fake, empty device list: as on any CI machine
    with pytest.raises(SystemExit) as exit:
        call_command("verify_gpu")
    assert exit.value.code == 2
    assert "verify_gpu: no CUDA device" in capsys.readouterr().err


def test_on_a_machine_without_cuda_the_auto_device_list_exits_2_and_says_why(settings, capsys):
    """GRADER_GPU_DEVICES=auto (the default, and what `make verify-gpu` sets) on a machine
    without CUDA: the pool learns it from a single-use process, so nothing is graded on the CPU."""
    if grader_torch_has_cuda(settings.GRADER_PYTHON):
        pytest.skip("the grader's torch has CUDA here")
    settings.GRADER_GPU_DEVICES = "auto"
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit:
        call_command("verify_gpu")
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "verify_gpu: no CUDA device for the grader's runs: torch " in err
    assert "is not a CUDA build" in err
    assert time.monotonic() - started < 60  # one zygote and one single-use process start


class ClaimsCuda:
    """A GPU pool that says it has a device and validates requests as SandboxPool does."""

    cuda = True
    cuda_detail = "a pretend device"
    layers = {"cgroups": True, "cpu": True, "root": True}

    def __init__(self, smoke_passes: bool = True) -> None:
        self.smoke_passes = smoke_passes
        self.snippets: list[tuple[list[str], float]] = []

    def run_snippets(self, blocks: list[str], time_limit: float = 30.0) -> dict[str, Any]:
        blocks, time_limit = jobs.normalize_snippets(list(blocks), time_limit)
        self.snippets.append((blocks, time_limit))
        status = "passed" if self.smoke_passes or len(self.snippets) > 1 else "failed"
        entries = [{"index": i, "status": "passed", "message": ""} for i in range(len(blocks))]
        if status == "failed":
            entries[1] = {"index": 1, "status": "failed", "message": "raised AssertionError"}
        return {"status": status, "message": "", "blocks": entries, "output": "diagnostics"}

    def log_tail(self) -> str:
        return "sandbox setup failed: a pretend reason"

    def close(self) -> None:
        pass


@pytest.fixture
def claims_cuda(monkeypatch):
    pool = ClaimsCuda()
    monkeypatch.setattr(verify_gpu, "start_pools", lambda count: [pool])
    return pool


def test_answer_blocks_run_under_a_time_limit_the_grader_accepts(claims_cuda, capsys):
    QuestionFactory(slug="on-the-gpu", answer=CUDA_ANSWER)
    QuestionFactory(slug="cpu-only", answer="```python\nx = 1\n```\n")
    QuestionFactory(slug="shown-only", answer="```python cuda norun\nimport triton\n```\n")
    call_command("verify_gpu", "--slots", "1")
    (smoke, _), (answer, _) = claims_cuda.snippets  # CUDA in the sandbox first, then the answer
    assert smoke == verify_gpu.SMOKE_BLOCKS
    # The answer with CUDA blocks runs in order, its norun block left out; the others not at all.
    assert answer == ["import torch\nx = torch.ones(2)\n", "y = x.cuda() * 2\n"]
    assert all(limit <= MAX_TIME_LIMIT for _, limit in claims_cuda.snippets)
    out = capsys.readouterr().out
    assert "on-the-gpu: 2 block(s) run, 1 of them CUDA" in out
    assert "cpu-only" not in out and "shown-only" not in out
    assert "0 problem(s)" in out


def test_when_cuda_fails_inside_the_sandbox_nothing_else_runs(monkeypatch, capsys):
    pool = ClaimsCuda(smoke_passes=False)
    monkeypatch.setattr(verify_gpu, "start_pools", lambda count: [pool])
    QuestionFactory(slug="on-the-gpu", answer=CUDA_ANSWER)
    with pytest.raises(SystemExit) as exit:
        call_command("verify_gpu")
    assert exit.value.code == 1
    err = capsys.readouterr().err
    assert "CUDA in the sandbox, block 2: raised AssertionError" in err
    assert "the grader's log:\nsandbox setup failed: a pretend reason" in err
    assert "nothing else was run" in err
    assert len(pool.snippets) == 1


def test_a_dry_run_without_cuda_goes_through_the_gpu_queue_end_to_end(settings, capsys):
    """Everything of the command but CUDA, on the CPU: the GPU queue's single-use processes
    grade an exercise's files and run the CPU blocks of an answer that has CUDA ones."""
    settings.GRADER_GPU_DEVICES = "none"
    ExerciseFactory(question=QuestionFactory(slug="double-on-gpu", kind="code"), queue="gpu")
    QuestionFactory(slug="on-the-gpu", answer=CUDA_ANSWER)
    call_command("verify_gpu", "--without-cuda", "--slots", "2")
    out = capsys.readouterr().out
    assert "double-on-gpu: exercise, 3 file(s) graded on the GPU queue" in out
    assert "on-the-gpu: 1 block(s) run, 0 of them CUDA" in out
    assert "verify_gpu: 1 GPU-queue exercise(s) graded on the CPU (--without-cuda)" in out
    assert "0 problem(s)" in out


def test_a_dry_run_reports_a_broken_exercise_with_its_output(settings, capsys):
    settings.GRADER_GPU_DEVICES = "none"
    ExerciseFactory(
        question=QuestionFactory(slug="double-on-gpu", kind="code"),
        queue="gpu",
        wrong_solutions={
            "right": "def double(x):\n    print('not wrong at all')\n    return 2 * x\n"
        },
    )
    with pytest.raises(SystemExit) as exit:
        call_command("verify_gpu", "--without-cuda", "--slots", "1", "double-on-gpu")
    assert exit.value.code == 1
    err = capsys.readouterr().err
    assert "double-on-gpu: wrong/right.py: must fail at least one check, but passed" in err
    assert "output: not wrong at all" in err
