"""Job builders and shared assertions for the sandbox tests (client API only: no torch here)."""

from __future__ import annotations

import os
import secrets
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from grader import SandboxPool, exercise

REPO = Path(__file__).resolve().parents[2]
GRADER_PYTHON = os.environ.get("GRADER_PYTHON", str(REPO / ".venv-grader" / "bin" / "python"))
EXERCISES = Path(__file__).resolve().parent / "exercises"

# What the web process holds in its environment; conftest.py sets it before any pool starts.
ENV_SECRET = "env-sentinel-" + secrets.token_hex(16)


def exercise_job(slug: str, code_file: str) -> dict[str, Any]:
    """The job for one file of an exercise folder (its code graded against its solution)."""
    folder = EXERCISES / slug
    return {**exercise.load(folder), "code": (folder / code_file).read_text()}


def probe_job(body: str, *, time_limit: float = 10, memory_limit_mb: int = 1024) -> dict[str, Any]:
    """A job whose one visible check calls ``probe()``; the reference's probe says "blocked".

    ``body`` is the submission: it defines ``probe()``, which tries an attack and returns
    "blocked" when the attack failed, or what it got when it did not (shown in the message).
    """
    return {
        "code": textwrap.dedent(body),
        "reference": "def probe():\n    return 'blocked'\n",
        "checks": [{"name": "probe", "visible": True, "code": "out = probe()", "compare": "out"}],
        "time_limit": time_limit,
        "memory_limit_mb": memory_limit_mb,
    }


def code_job(code: str, **limits: Any) -> dict[str, Any]:
    """A job for code that is expected to misbehave before or while its one check runs."""
    return {**probe_job(code, **limits), "code": textwrap.dedent(code)}


def assert_still_grading(pool: SandboxPool) -> None:
    """The pool grades the next submissions correctly: a right one passes, a wrong one fails."""
    right = pool.grade(exercise_job("normalize-rows", "solution.py"))
    assert right["status"] == "passed", right
    wrong = pool.grade(exercise_job("normalize-rows", "wrong/zero_rows_nan.py"))
    assert wrong["status"] == "failed", wrong
    failing = [c["name"] for c in wrong["checks"] if c["status"] == "failed"]
    assert failing == ["leaves a zero row at zero"]


def grader_torch_has_cuda(python: str | os.PathLike[str] = GRADER_PYTHON) -> bool:
    """What the grader's torch says in a throwaway process (CUDA initialised there, not here)."""
    probe = "import torch; print(torch.cuda.is_available())"
    out = subprocess.run(
        [os.fspath(python), "-c", probe], capture_output=True, text=True, check=True, env={}
    )
    return out.stdout.strip() == "True"
