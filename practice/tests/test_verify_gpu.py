"""`manage.py verify_gpu` (`make verify-gpu`): it must never pass where CUDA is absent, and says
why. (On a machine with a GPU it grades the GPU-queue exercises; that run is not part of CI, so
the command's own logic is tested here against a pool that claims a device.)"""

import time
from typing import Any

import pytest
from django.core.management import call_command

from grader import jobs
from grader.limits import MAX_TIME_LIMIT
from grader.tests.helpers import grader_torch_has_cuda
from practice import grader_client
from quizbank.tests.factories import QuestionFactory

pytestmark = pytest.mark.django_db

CUDA_ANSWER = (
    "On the CPU:\n\n```python\nimport torch\nx = torch.ones(2)\n```\n\n"
    "On a GPU:\n\n```python cuda\ny = x.cuda() * 2\n```\n\n"
    "Not run:\n\n```python cuda norun\nimport triton\n```\n"
)


@pytest.fixture
def fresh_pools():
    grader_client.close_pools()
    yield
    grader_client.close_pools()


def test_without_a_cuda_device_it_exits_non_zero_and_says_so(settings, fresh_pools, capsys):
    settings.GRADER_GPU_DEVICES = "none"  # the fake, empty device list: as on any CI machine
    with pytest.raises(SystemExit) as exit:
        call_command("verify_gpu")
    assert exit.value.code == 2
    assert "verify_gpu: no CUDA device" in capsys.readouterr().err


def test_on_a_machine_without_cuda_the_auto_device_list_exits_2_and_says_why(
    settings, fresh_pools, capsys
):
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

    def __init__(self) -> None:
        self.snippets: list[tuple[list[str], float]] = []

    def run_snippets(self, blocks: list[str], time_limit: float = 30.0) -> dict[str, Any]:
        blocks, time_limit = jobs.normalize_snippets(list(blocks), time_limit)
        self.snippets.append((blocks, time_limit))
        entries = [{"index": i, "status": "passed", "message": ""} for i in range(len(blocks))]
        return {"status": "passed", "message": "", "blocks": entries, "output": ""}

    def close(self) -> None:
        pass


@pytest.fixture
def claims_cuda(monkeypatch):
    pool = ClaimsCuda()
    monkeypatch.setattr(grader_client, "sandbox_pool", lambda kind="cpu", **_: pool)
    monkeypatch.setattr(grader_client, "close_pools", lambda: None)
    return pool


def test_answer_blocks_run_under_a_time_limit_the_grader_accepts(claims_cuda, capsys):
    QuestionFactory(slug="on-the-gpu", answer=CUDA_ANSWER)
    QuestionFactory(slug="cpu-only", answer="```python\nx = 1\n```\n")
    call_command("verify_gpu")
    runs = [blocks for blocks, _ in claims_cuda.snippets]
    # The answer with CUDA blocks runs in order, its norun block left out; the CPU-only one not.
    assert runs[-1] == ["import torch\nx = torch.ones(2)\n", "y = x.cuda() * 2\n"]
    assert all(limit <= MAX_TIME_LIMIT for _, limit in claims_cuda.snippets)
    out = capsys.readouterr().out
    assert "on-the-gpu: 2 block(s) run, 1 of them CUDA" in out
    assert "cpu-only" not in out
