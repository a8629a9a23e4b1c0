"""The code blocks of an answer, and which of them run where (see fixtures/bank/README.md)."""

from __future__ import annotations

from dataclasses import dataclass

from markdown_it import MarkdownIt

# `distributed`: needs a process group (sockets), which the grader's sandbox never allows.
SKIP_TAGS = ("cuda", "torchvision", "distributed", "norun")


@dataclass(frozen=True)
class Block:
    code: str
    tags: frozenset[str]
    line: int

    @property
    def skip_reason(self) -> str | None:
        """Why the block does not run on a CPU-only machine, or None if it does."""
        return next((tag for tag in SKIP_TAGS if tag in self.tags), None)


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
