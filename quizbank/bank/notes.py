"""What a wrong solution declares about itself in its opening docstring: a module of its own, with
no model imports, so that search (quizbank/search/semantic.py) reads the notes without importing the
bank's schema and the models behind it."""

from __future__ import annotations

import ast
import re

# A `Correction:` line (what is true, issue 27) may follow the hint; it is split off so that it
# never reads as part of the hint.
_NOTE_RE = re.compile(r"^(Misconception|Hint|Correction):", re.MULTILINE)


def wrong_solution_notes(code: str) -> dict[str, str] | None:
    """The misconception and hint a wrong solution declares in its opening docstring
    (`Misconception: ...` then `Hint: ...`, and `correction` when a `Correction: ...` follows),
    or None when the misconception or the hint is missing or empty."""
    try:
        docstring = ast.get_docstring(ast.parse(code), clean=True)
    except SyntaxError:
        return None
    if not docstring:
        return None
    parts = _NOTE_RE.split(docstring)
    notes = {
        label.lower(): " ".join(text.split())
        for label, text in zip(parts[1::2], parts[2::2], strict=True)
    }
    if not notes.get("misconception") or not notes.get("hint"):
        return None
    found = {"misconception": notes["misconception"], "hint": notes["hint"]}
    if notes.get("correction"):
        found["correction"] = notes["correction"]
    return found
