"""What a question means: its embedding, and the questions nearest a query's.

Each question's embedding (encoder.py) is computed from its title, concepts, prompt and the first
part of its answer, and stored with it as 384 float16 numbers (`Question.embedding`), beside the
hash of the text it was computed from (`embedding_key`), so an unchanged question is never
encoded again. Encoding costs milliseconds a question, so a save does not pay it: `load_bank`
encodes its changed questions together (`prime`, `fill`), and a question saved otherwise (the
admin, a test's factory) is encoded by the first search that reads it (`vectors`). A search reads
the embeddings of the questions the user may see once per bank version, as one matrix, and scores
a query (embedded once, cached) against all of them with one product.

`fuse` merges three rankings by reciprocal rank: the full-text ranker's (postgres.py or
fallback.py: strict, exact names and slips first), BM25's (bm25.py: any of the words, no
cut-off) and meaning's; and `answerable` answers nothing for a query that neither means anything
the bank is about nor names anything it holds. Every figure below was set on the main, dev,
dev-v3 and dev-v4 query sets (bench/search_quality.py), never on the held-out ones.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from ..caching import bank_version
from . import encoder as encoder_module
from .terms import Term

if TYPE_CHECKING:
    import numpy as np

# Which model and text recipe an embedding was computed with: a change re-encodes every question
# at the next load_bank. The question's text alone: averaging in the title's embedding (recipe 1)
# found less on the dev-v3 set.
RECIPE = "all-MiniLM-L6-v2/text/2"
# The answer's first part: its first paragraph of prose, at most this many characters.
ANSWER_PART = 400
# Questions without an embedding that one search encodes and stores (load_bank does the rest).
FILL_ON_SEARCH = 64

# Reciprocal-rank fusion: each ranking adds weight / (RRF_K + rank) to a question; BM25 and
# meaning each bring their first CANDIDATES; a result that only they found is cut off under
# FUSED_SHARE of the best, so what they add is what they agree on, or one's first two or three.
RRF_K = 3
FULL_TEXT_WEIGHT = 1.0
WORDS_WEIGHT = 1.0
SEMANTIC_WEIGHT = 1.0
CANDIDATES = 20
FUSED_SHARE = 0.3
# Whether a query is about the bank (`answerable`): a linear score of what meaning and words say,
# fitted (logistic regression) on the main, dev, dev-v3 and dev-v4 sets' on-topic and off-topic
# queries, both rankers pooled; held out of the fit, dev-v4 was answered alike. Each weight is on
# a cosine similarity or a 0/1 flag:
ABOUT_WEIGHTS = {
    # the query's best cosine similarity to any question
    "best": 6.74,
    # its best to the questions its words find first (BM25's and full text's first three):
    # "freeze bread" finds freeze-layers by its words, whose meaning is far from it
    "matched": 4.78,
    # full text finds something (its coverage rule passed)
    "full_text": 1.93,
    # ...and the query names something the bank holds (a PyTorch name, a synonyms phrase, a
    # corrected slip)
    "named": 0.89,
    # a word no title, prompt or answer uses in any form ("guitar")
    "unused": -1.76,
    # the share of its terms that no title, concept or slug uses
    "foreign": -1.46,
}
ABOUT_BIAS = -2.80
ABOUT_THRESHOLD = 0.25
# A query this close in meaning to a question is always answered (no off-topic dev query reached
# 0.44).
SEMANTIC_STRONG = 0.45
# The nearest questions alone (the "semantic" column of bench/search_quality.py) need this much.
SEMANTIC_WEAK = 0.3
# The first results of the word rankers whose meaning `answerable` reads.
MATCHED = 3

_MARKDOWN = re.compile(r"[`*_#>\[\]|]+")


def embedding_text(title: str, concepts: Any, prompt: str, answer: str) -> str:
    """What a question's embedding is computed from, most telling first (the encoder reads 128
    tokens): title, concepts, prompt, the answer's first paragraph of prose."""
    concept_text = ", ".join(str(c) for c in concepts) if isinstance(concepts, list) else ""
    first = ""
    in_code = False
    for block in answer.split("\n\n"):
        if block.lstrip().startswith("```"):
            in_code = block.count("```") % 2 == 1
            continue
        if in_code:
            in_code = block.count("```") % 2 == 0
            continue
        if block.strip():
            first = block.strip()[:ANSWER_PART]
            break
    parts = [title, concept_text, prompt, first]
    return " \n".join(_MARKDOWN.sub(" ", p).strip() for p in parts if p.strip())


def embedding_key(text: str) -> str:
    return hashlib.sha256(f"{RECIPE}\n{text}".encode()).hexdigest()


# Embeddings computed in this process, by key: a bank load encodes its questions in batches before
# saving them one by one, and loading the same text again (tests, a second load) costs nothing.
_MEMO: OrderedDict[str, bytes] = OrderedDict()
_MEMO_SIZE = 20_000
_MEMO_LOCK = threading.Lock()


def _to_bytes(vector: np.ndarray) -> bytes:
    return vector.astype("<f2").tobytes()


def prime(texts: list[str]) -> None:
    """Encode the questions' texts (`embedding_text`) not yet encoded, together (faster than one
    by one)."""
    model = encoder_module.encoder()
    if model is None:
        return
    todo = list(dict.fromkeys(text for text in texts if embedding_key(text) not in _MEMO))
    if not todo:
        return
    vectors = model.encode(todo)
    with _MEMO_LOCK:
        for text, vector in zip(todo, vectors, strict=True):
            _MEMO[embedding_key(text)] = _to_bytes(vector)
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)


def embed(text: str) -> bytes | None:
    """The stored form of a question's embedding (float16, little-endian), from its
    `embedding_text`; None without the encoder."""
    if encoder_module.encoder() is None:
        return None
    key = embedding_key(text)
    if key not in _MEMO:
        prime([text])
    return _MEMO.get(key)


def refresh(question: Any) -> None:
    """Keep `question.embedding` if it was computed from its text; else take the one this process
    encoded for that text (load_bank primes them), or none: the first search that reads the
    question encodes it. A save never waits for the encoder."""
    text = embedding_text(question.title, question.concepts, question.prompt, question.answer)
    key = embedding_key(text)
    if question.embedding is not None and question.embedding_key == key:
        return
    vector = _MEMO.get(key)
    question.embedding = vector
    question.embedding_key = key if vector is not None else ""


@dataclass
class Vectors:
    """The embeddings of the questions a user may see, one row each (those without one left
    out)."""

    pks: list[int]
    matrix: np.ndarray
    _rows: dict[int, int] | None = None

    def rows(self) -> dict[int, int]:
        """Each question's row."""
        if self._rows is None:
            self._rows = {pk: n for n, pk in enumerate(self.pks)}
        return self._rows


@dataclass
class Similar:
    """A query's cosine similarity to each question (numpy, in `vectors` order). Only the few
    nearest are listed in Python: on 10,000 questions a list of them all cost more than the
    product."""

    scores: np.ndarray
    vectors: Vectors

    @property
    def best(self) -> float:
        return float(self.scores.max()) if len(self.scores) else 0.0

    def of(self, pks: list[int]) -> list[float]:
        """The similarities of these questions (those without an embedding left out)."""
        rows = self.vectors.rows()
        return [float(self.scores[rows[pk]]) for pk in pks if pk in rows]

    def nearest(self, count: int) -> list[tuple[int, float]]:
        """The `count` most similar questions, most similar first."""
        import numpy as np

        count = min(count, len(self.scores))
        if not count:
            return []
        chosen = np.argpartition(-self.scores, count - 1)[:count]
        chosen = chosen[np.argsort(-self.scores[chosen], kind="stable")]
        return [(self.vectors.pks[i], float(self.scores[i])) for i in chosen]


_READ: dict[tuple[str, str], Vectors] = {}
_READ_LOCK = threading.Lock()


def vectors(queryset: QuerySet) -> Vectors:
    """The embeddings of `queryset`'s questions, read once per bank version (a few sets kept).
    Questions saved since their text changed have none yet: up to FILL_ON_SEARCH of them are
    encoded now and stored (load_bank encodes them all)."""
    import numpy as np

    key = (bank_version(), str(queryset.values("pk").query))
    found = _READ.get(key)
    if found is None:
        rows = list(queryset.order_by("pk").values_list("pk", "embedding"))
        missing = [pk for pk, blob in rows if blob is None][:FILL_ON_SEARCH]
        filled = _fill_missing(queryset.model, missing) if missing else {}
        pks = []
        blobs = []
        for pk, blob in rows:
            blob = filled.get(pk, blob)
            if blob is not None and len(blob) == encoder_module.DIMENSIONS * 2:
                pks.append(pk)
                blobs.append(bytes(blob))
        matrix = (
            np.frombuffer(b"".join(blobs), dtype="<f2")
            .reshape(len(pks), encoder_module.DIMENSIONS)
            .astype(np.float32)
        )
        found = Vectors(pks, matrix)
        with _READ_LOCK:
            while len(_READ) >= 4:
                _READ.pop(next(iter(_READ)))
            _READ[key] = found
    return found


def _fill_missing(model: Any, pks: list[int]) -> dict[int, bytes]:
    """Encode and store the embeddings of these questions (saved without one); each is stored
    only if the question was not saved again meanwhile (its `updated_at` unchanged)."""
    rows = model.objects.filter(pk__in=pks).values_list(
        "pk", "title", "concepts", "prompt", "answer", "updated_at"
    )
    read = [(pk, embedding_text(t, c, p, a), at) for pk, t, c, p, a, at in rows]
    prime([text for _, text, _ in read])
    filled = {}
    for pk, text, updated_at in read:
        vector = embed(text)
        if vector is None:
            continue
        stored = model.objects.filter(pk=pk, updated_at=updated_at, embedding__isnull=True).update(
            embedding=vector, embedding_key=embedding_key(text)
        )
        if stored:
            filled[pk] = vector
    return filled


def similarities(queryset: QuerySet, text: str) -> Similar | None:
    """Every question of `queryset` with its cosine similarity to `text`; None without the
    encoder."""
    model = encoder_module.encoder()
    if model is None:
        return None
    found = vectors(queryset)
    return Similar(found.matrix @ model.query(text), found)


def answerable(similar: Similar, full_text: list[int], words: list[int], terms: list[Term]) -> bool:
    """Whether the query is about something the bank holds, or answers nothing (the empty state
    suggests popular questions): a strong semantic match (SEMANTIC_STRONG) always is; otherwise
    ABOUT_WEIGHTS weigh meaning (the best match, and the match of what the words find) against
    words (full text's coverage rule, names, words the bank never uses)."""
    best = similar.best
    if best >= SEMANTIC_STRONG:
        return True
    matched = similar.of([*words[:MATCHED], *full_text[:MATCHED]])
    signals = {
        "best": best,
        "matched": max(matched, default=0.0),
        "full_text": float(bool(full_text)),
        "named": float(bool(full_text) and any(not term.plain or term.marks for term in terms)),
        "unused": float(any(term.unused for term in terms)),
        "foreign": sum(term.foreign for term in terms) / max(len(terms), 1),
    }
    score = ABOUT_BIAS + sum(ABOUT_WEIGHTS[name] * value for name, value in signals.items())
    return score >= ABOUT_THRESHOLD


def fuse(full_text: list[int], words: list[int], similar: Similar, terms: list[Term]) -> list[int]:
    """The full-text results, BM25's and the questions nearest in meaning, merged by reciprocal
    rank; those that only BM25 or meaning found are cut off under FUSED_SHARE of the best fused
    score."""
    if not answerable(similar, full_text, words, terms):
        return []
    scores: dict[int, float] = {}
    rankings = (
        (full_text, FULL_TEXT_WEIGHT),
        (words, WORDS_WEIGHT),
        ([pk for pk, _ in similar.nearest(CANDIDATES)], SEMANTIC_WEIGHT),
    )
    for ranking, weight in rankings:
        for rank, pk in enumerate(ranking, 1):
            scores[pk] = scores.get(pk, 0.0) + weight / (RRF_K + rank)
    if not scores:
        return []
    # Full text's results are all kept (its own floor cut them already: a broad word still lists
    # every question about it); what BM25 and meaning add must reach a share of the best.
    floor = FUSED_SHARE * max(scores.values())
    found = set(full_text)
    kept = (pk for pk in scores if scores[pk] >= floor or pk in found)
    return sorted(kept, key=lambda pk: -scores[pk])


def semantic_only(similar: Similar) -> list[int]:
    """The nearest questions alone (bench/search_quality.py's "semantic" column): nothing when
    the best is under SEMANTIC_WEAK, else the ten nearest."""
    if similar.best < SEMANTIC_WEAK:
        return []
    return [pk for pk, _ in similar.nearest(10)]


def fill(queryset: QuerySet) -> int:
    """Compute the embeddings that `queryset`'s questions lack or computed from other text (the
    encoder was missing when they were saved, or the recipe changed); how many were set."""
    if encoder_module.encoder() is None:
        return 0
    rows = queryset.values_list("pk", "title", "concepts", "prompt", "answer", "embedding_key")
    stale = []
    for pk, title, concepts, prompt, answer, key in rows:
        text = embedding_text(title, concepts, prompt, answer)
        if embedding_key(text) != key:
            stale.append((pk, text))
    prime([text for _, text in stale])
    model = queryset.model
    changed = []
    for pk, text in stale:
        question = model(pk=pk)
        question.embedding = embed(text)
        question.embedding_key = embedding_key(text)
        changed.append(question)
    model.objects.bulk_update(changed, ["embedding", "embedding_key"], batch_size=500)
    return len(changed)
