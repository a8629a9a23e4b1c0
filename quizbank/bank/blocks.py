"""The code blocks of an answer, and which of them run where (see fixtures/bank/README.md)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from markdown_it import MarkdownIt

# `distributed`: needs a process group (sockets), which the grader's sandbox never allows.
SKIP_TAGS = ("cuda", "torchvision", "distributed", "norun")

# Libraries the grader's sandbox can never run, on any device: Triton compiles each kernel by
# running ptxas and a C compiler (execve, which the seccomp filter refuses) and loads what they
# build from a cache directory (every writable directory in the sandbox is noexec). A block that
# imports one can only be shown: it must be tagged `norun`.
SANDBOX_CANNOT_RUN = ("triton",)


@dataclass(frozen=True)
class Block:
    code: str
    tags: frozenset[str]
    line: int

    @property
    def skip_reason(self) -> str | None:
        """Why the block does not run on a CPU-only machine, or None if it does."""
        return next((tag for tag in SKIP_TAGS if tag in self.tags), None)

    @property
    def sandbox_problem(self) -> str | None:
        """Why the block, which would run somewhere (CPU or GPU), cannot run in the sandbox."""
        if "norun" in self.tags:
            return None
        found = sorted(_imported(self.code) & set(SANDBOX_CANNOT_RUN))
        if not found:
            return None
        return (
            f"imports {', '.join(found)}, which the grader's sandbox cannot run (it executes a "
            "compiler): tag the block `norun`"
        )


def _imported(code: str) -> set[str]:
    """The top-level names of the modules ``code`` imports (empty if it does not parse)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def python_blocks(markdown: str) -> list[Block]:
    blocks = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type != "fence":
            continue
        lang, *tags = token.info.split()
        if lang == "python":
            line = (token.map[0] + 1) if token.map else 0
            blocks.append(Block(code=token.content, tags=frozenset(tags), line=line))
    return blocks
