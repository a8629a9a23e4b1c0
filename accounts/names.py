"""What a username looks like, so that two names a reader cannot tell apart cannot both exist.

The key of a name is its NFKC form, case-folded, with each character that Unicode lists as a
homoglyph of a Latin letter or digit replaced by that Latin character (confusable-homoglyphs,
the Unicode consortium's confusables data): "Alice", "ALICE" and "Аlice" (a Cyrillic А) share one
key, so only the first of them can sign up."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from confusable_homoglyphs import confusables


@lru_cache(maxsize=4096)
def _latin(character: str) -> str:
    found = confusables.is_confusable(character, preferred_aliases=["latin"], greedy=True)
    for entry in found or ():
        for glyph in entry["homoglyphs"]:
            if glyph["c"].isascii():
                return glyph["c"]
    return character


def name_key(username: str) -> str:
    folded = unicodedata.normalize("NFKC", username).casefold()
    return "".join(c if c.isascii() else _latin(c) for c in folded).casefold()
