"""One warm CPU pool for the whole session (each zygote takes seconds to import torch)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import SandboxPool
from grader.tests.helpers import ENV_SECRET, GRADER_PYTHON

# Set before any pool starts: a sandbox must never see these, in its environment or its memory.
os.environ["QUIZBANK_TEST_SECRET"] = ENV_SECRET
os.environ.setdefault("SECRET_KEY", ENV_SECRET)
os.environ.setdefault("DATABASE_URL", f"postgres://quizbank:{ENV_SECRET}@127.0.0.1:5432/quizbank")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if Path(GRADER_PYTHON).exists():
        return
    skip = pytest.mark.skip(reason=f"no grader interpreter at {GRADER_PYTHON} (make setup)")
    for item in items:
        if "grader/tests" in str(item.path):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(GRADER_PYTHON, slots=2) as pool:
        yield pool
