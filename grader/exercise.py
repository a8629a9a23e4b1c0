"""Reading an exercise folder of the bank (fixtures/bank/<slug>/) into a job for the sandbox.

Used by the curators' CLI, which runs in the grader's interpreter (PyYAML is installed there).
The format is documented in fixtures/bank/README.md; keys are checked by jobs.normalize_job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from grader import jobs

_EXERCISE_KEYS = {"queue", "time_limit", "memory_limit_mb", "forbid", "checks", "mutant_waivers"}


def load(folder: Path) -> dict[str, Any]:
    """The job for ``folder`` with ``code`` left empty; raises JobError naming the problem."""
    path = folder / "exercise.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        reference = (folder / "solution.py").read_text(encoding="utf-8")
    except (OSError, yaml.YAMLError) as error:
        raise jobs.JobError(f"{folder}: {error}") from error
    if not isinstance(data, dict):
        raise jobs.JobError(f"{path}: not a mapping")
    unknown = set(data) - _EXERCISE_KEYS
    if unknown:
        raise jobs.JobError(f"{path}: unknown keys {sorted(unknown)}")
    # Waivers are for mutation testing (verify_bank), not part of a grading job.
    job = {k: v for k, v in data.items() if v is not None and k != "mutant_waivers"}
    wrong = {p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / "wrong").glob("*.py"))}
    job.update(code="", reference=reference, wrong=wrong)
    try:
        jobs.normalize_job(job)
    except jobs.JobError as error:
        raise jobs.JobError(f"{path}: {error}") from error
    return job


def waivers(folder: Path) -> dict[str, str]:
    """The folder's ``mutant_waivers`` (read after load() has checked the file)."""
    data = yaml.safe_load((folder / "exercise.yaml").read_text(encoding="utf-8"))
    return dict(data.get("mutant_waivers") or {})
