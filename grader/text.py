"""Text that crossed from a sandbox, made safe to store. Standard library only.

Anything a sandboxed process wrote (output, exception messages, dict keys in a message) may hold
lone surrogates, which no UTF-8 encoder accepts, and NUL characters, which PostgreSQL refuses in
text columns. Either would make saving the verdict fail and leave the submission to be graded
again. Both become U+FFFD (the replacement character) before a result leaves the zygote, and the
client does it again.
"""

from __future__ import annotations

import re
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def clean(text: str) -> str:
    return _UNSTORABLE.sub(REPLACEMENT, text)


def clean_all(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with every string cleaned."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean_all(key): clean_all(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean_all(item) for item in value]
    return value
