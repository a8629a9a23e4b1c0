"""Word matching without a cut-off: Okapi BM25 over the questions a user may see, in Python.

The full-text rankers (postgres.py, fallback.py) are strict on purpose: a question must hold most
of the query's terms, so a vague word does not list the bank. A learner's own words rarely pass
that rule ("keep the backbone fixed and only train the classifier head"), so semantic.py fuses
their results with this ranking, which scores every question holding any of the terms by how
rare each term is and how often it stands there, and with the encoder's.

A question is read as its title (counted three times), concepts (twice), slug, prompt and the
first part of its answer's prose, as words by fallback.py's light stem, function words left out.
A query is read as its terms (terms.py): each phrase of a term, the synonyms file's group
included, and the slips the ranker corrected, so both rankers read the query alike.

The index (each word's questions and their BM25 term weights, as numpy arrays) is built once per
bank version and set of visible questions (a few kept): on 10,000 questions a search adds one
array update per query word (bench/api.py).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.db.models.functions import Substr

from ..caching import bank_version
from .fallback import words_of
from .terms import FUNCTION_WORDS, Term

if TYPE_CHECKING:
    import numpy as np

K1 = 1.2
B = 0.75
# How often each field's words count, and how much of the answer is read (prose only; code
# blocks are left out, their identifiers are the prompt's and the title's already).
FIELD_WEIGHTS = {"title": 3, "concepts": 2, "slug": 1, "prompt": 1, "answer": 1}
ANSWER_PART = 1500
# Read of the answer from the database, before its code blocks are taken out.
ANSWER_READ = 6000
_CODE = re.compile(r"```.*?(?:```|$)", re.S)


@dataclass
class Index:
    pks: list[int]
    # word -> (row numbers, BM25 weight of the word in each, idf already applied)
    postings: dict[str, tuple[np.ndarray, np.ndarray]]


def document_words(title: str, concepts: object, slug: str, prompt: str, answer: str) -> Counter:
    """A question's words, each counted as often as it stands, by field weight."""
    prose = _CODE.sub(" ", answer)[:ANSWER_PART]
    concept_text = " ".join(str(c) for c in concepts) if isinstance(concepts, list) else ""
    fields = {
        "title": title,
        "concepts": concept_text,
        "slug": slug.replace("-", " "),
        "prompt": prompt,
        "answer": prose,
    }
    counts: Counter = Counter()
    for name, text in fields.items():
        weight = FIELD_WEIGHTS[name]
        for word in words_of(text):
            if word not in FUNCTION_WORDS:
                counts[word] += weight
    return counts


def query_words(terms: list[Term]) -> list[str]:
    """The words BM25 looks for: those of every phrase of every term and of its corrections."""
    phrases = [p for t in terms for p in [*t.phrases, *t.marks]]
    words = (w for p in phrases for w in words_of(p) if w not in FUNCTION_WORDS)
    return list(dict.fromkeys(words))


def build(rows: list[tuple[int, str, object, str, str, str]]) -> Index:
    import numpy as np

    documents = [document_words(*row[1:]) for row in rows]
    lengths = np.array([sum(d.values()) for d in documents], dtype=np.float32)
    average = float(lengths.mean()) if len(documents) else 1.0
    norms = K1 * (1 - B + B * lengths / max(average, 1e-9))
    where: dict[str, list[int]] = {}
    counts: dict[str, list[int]] = {}
    for n, document in enumerate(documents):
        for word, count in document.items():
            where.setdefault(word, []).append(n)
            counts.setdefault(word, []).append(count)
    total = len(documents)
    postings = {}
    for word, found in where.items():
        rows_of = np.array(found, dtype=np.int32)
        tf = np.array(counts[word], dtype=np.float32)
        idf = math.log(1 + (total - len(found) + 0.5) / (len(found) + 0.5))
        postings[word] = (rows_of, (idf * tf * (K1 + 1) / (tf + norms[rows_of])).astype(np.float32))
    return Index([row[0] for row in rows], postings)


_READ: dict[tuple[str, str], Index] = {}
_READ_LOCK = threading.Lock()


def index(queryset: QuerySet) -> Index:
    """The BM25 index of `queryset`'s questions, built once per bank version (a few sets kept)."""
    key = (bank_version(), str(queryset.values("pk").query))
    found = _READ.get(key)
    if found is None:
        # In id order, so that ties rank alike on every database.
        rows = queryset.order_by("pk").annotate(answer_part=Substr("answer", 1, ANSWER_READ))
        found = build(
            list(rows.values_list("pk", "title", "concepts", "slug", "prompt", "answer_part"))
        )
        with _READ_LOCK:
            while len(_READ) >= 4:
                _READ.pop(next(iter(_READ)))
            _READ[key] = found
    return found


def ranked(queryset: QuerySet, terms: list[Term], count: int) -> list[int]:
    """The ids of the `count` questions of `queryset` that score highest for `terms`, best first
    (only those holding one of them at least)."""
    import numpy as np

    found = index(queryset)
    scores = np.zeros(len(found.pks), dtype=np.float32)
    for word in query_words(terms):
        posting = found.postings.get(word)
        if posting is not None:
            scores[posting[0]] += posting[1]
    held = np.flatnonzero(scores > 0)
    if not len(held):
        return []
    if len(held) > count:
        held = held[np.argpartition(-scores[held], count - 1)[:count]]
    held = held[np.argsort(-scores[held], kind="stable")]
    return [found.pks[i] for i in held.tolist()]
