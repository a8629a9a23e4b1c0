"""Which of an answer's code blocks run where (quizbank/bank/blocks.py, fixtures/bank/README.md)."""

from pathlib import Path

import pytest
from django.conf import settings

from quizbank.bank.blocks import python_blocks

BANK = Path(settings.BASE_DIR) / "fixtures" / "bank"


def only_block(info: str, code: str):
    (block,) = python_blocks(f"```{info}\n{code}```\n")
    return block


@pytest.mark.parametrize(
    "code",
    ["import triton\n", "import triton.language as tl\n", "from triton import jit\n"],
)
def test_a_block_that_imports_triton_must_not_run(code):
    assert "cannot run" in only_block("python cuda", code).sandbox_problem
    assert only_block("python cuda norun", code).sandbox_problem is None


@pytest.mark.parametrize(
    "code", ["import torch\n", "import tritonclient\n", "from . import triton\n", "x = (\n"]
)
def test_other_blocks_have_no_sandbox_problem(code):
    assert only_block("python", code).sandbox_problem is None


def test_every_block_of_the_shipped_bank_can_run_where_its_tags_say():
    problems = [
        f"{path.parent.name}/answer.md line {block.line}: {block.sandbox_problem}"
        for path in sorted(BANK.glob("*/answer.md"))
        for block in python_blocks(path.read_text())
        if block.sandbox_problem
    ]
    assert problems == []
