"""What a question means: its embedding, and the questions nearest a query's.

Each question's embedding (encoder.py) is computed from its title, concepts, prompt and the first
part of its answer when it is saved (a bank load encodes its changed questions together first,
`prime`), and stored with it as 384 float16 numbers (`Question.embedding`), beside the hash of the
text it was computed from, so an unchanged question is never encoded again. A search reads the
embeddings of the questions the user may see once per bank version, as one matrix, and scores a
query (embedded once, cached) against all of them with one product.

The stored vector is the mean of two embeddings, the question's text and its title alone (then
scaled to unit length): on the dev set that found more than either, as a short query reads more
like a title than like a prompt.

`fuse` merges this ranking with the full-text one (postgres.py or fallback.py) by reciprocal rank,
the full-text ranks weighing more, so exact and misspelt names stay on top; and answers nothing for
a query that neither means anything the bank is about nor names anything it holds.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from ..caching import bank_version
from . import encoder as encoder_module
from .fallback import words_of
from .terms import Term

if TYPE_CHECKING:
    import numpy as np

# Which model and text recipe an embedding was computed with: a change re-encodes every question.
RECIPE = "all-MiniLM-L6-v2/text+title/1"
# The answer's first part: its first paragraph of prose, at most this many characters.
ANSWER_PART = 400

# Reciprocal-rank fusion: each list adds weight / (K + rank). Full text weighs more, so that its
# first result stays first unless meaning puts another close behind it far ahead.
RRF_K = 5
FULL_TEXT_WEIGHT = 1.0
SEMANTIC_WEIGHT = 0.6
# Cosine similarities (unit vectors) of a query to a question's embedding, measured on the dev set:
# from SEMANTIC_STRONG a question is about what the query means, even sharing none of its words;
# under SEMANTIC_WEAK the query means nothing the bank is about.
SEMANTIC_STRONG = 0.5
SEMANTIC_WEAK = 0.35
# Questions that meaning alone adds: within this much of the best similarity, at most this many.
SEMANTIC_MARGIN = 0.08
SEMANTIC_EXTRA = 5
# A plain word is distinctive when it stands in the titles, concepts or slugs of at most this share
# of the questions (and at least DISTINCTIVE_MIN of them however small the bank).
DISTINCTIVE_SHARE = 0.04
DISTINCTIVE_MIN = 6

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


def prime(items: list[tuple[str, str]]) -> None:
    """Encode the questions' (text, title) pairs not yet encoded, together (faster than one by
    one)."""
    import numpy as np

    model = encoder_module.encoder()
    if model is None:
        return
    todo = list(dict.fromkeys(item for item in items if embedding_key(item[0]) not in _MEMO))
    if not todo:
        return
    vectors = model.encode([text for text, _ in todo] + [title for _, title in todo])
    both = vectors[: len(todo)] + vectors[len(todo) :]
    both /= np.maximum(np.linalg.norm(both, axis=1, keepdims=True), 1e-12)
    with _MEMO_LOCK:
        for (text, _), vector in zip(todo, both, strict=True):
            _MEMO[embedding_key(text)] = _to_bytes(vector)
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)


def embed(text: str, title: str) -> bytes | None:
    """The stored form of a question's embedding (float16, little-endian), from its
    `embedding_text` and title; None without the encoder."""
    if encoder_module.encoder() is None:
        return None
    key = embedding_key(text)
    if key not in _MEMO:
        prime([(text, title)])
    return _MEMO.get(key)


def refresh(question: Any) -> None:
    """Set `question.embedding` from its text, unless it was computed from this text already."""
    text = embedding_text(question.title, question.concepts, question.prompt, question.answer)
    key = embedding_key(text)
    if question.embedding is not None and question.embedding_key == key:
        return
    vector = embed(text, question.title)
    question.embedding = vector
    question.embedding_key = key if vector is not None else ""


@dataclass
class Vectors:
    """The embeddings of the questions a user may see, one row each, and in how many of their
    heads (title, concepts, slug) each word stands."""

    pks: list[int]
    matrix: np.ndarray
    head_counts: dict[str, int]
    questions: int

    @functools.cached_property
    def index(self) -> dict[int, int]:
        return {pk: i for i, pk in enumerate(self.pks)}


@dataclass
class Similar:
    """A query's cosine similarity to each question (numpy, in `vectors` order). Only the few
    nearest are listed in Python: on 10,000 questions a list of them all cost more than the
    product."""

    scores: np.ndarray
    vectors: Vectors

    @functools.cached_property
    def ascending(self) -> np.ndarray:
        import numpy as np

        return np.sort(self.scores)

    @property
    def best(self) -> float:
        return float(self.ascending[-1]) if len(self.scores) else 0.0

    def nearest(self, count: int) -> list[tuple[int, float]]:
        """The `count` most similar questions, most similar first."""
        import numpy as np

        count = min(count, len(self.scores))
        if not count:
            return []
        chosen = np.argpartition(-self.scores, count - 1)[:count]
        chosen = chosen[np.argsort(-self.scores[chosen], kind="stable")]
        return [(self.vectors.pks[i], float(self.scores[i])) for i in chosen]

    def ranks(self, pks: list[int]) -> list[int]:
        """Each question's rank by similarity (1 = nearest); past the last for one without an
        embedding."""
        import numpy as np

        last = len(self.scores) + 1
        where = [self.vectors.index.get(pk) for pk in pks]
        known = [i for i in where if i is not None]
        if not known:
            return [last] * len(pks)
        higher = len(self.scores) - np.searchsorted(
            self.ascending, self.scores[known], side="right"
        )
        ranks = iter((higher + 1).tolist())
        return [last if i is None else next(ranks) for i in where]


_READ: dict[tuple[str, str], Vectors] = {}
_READ_LOCK = threading.Lock()


def vectors(queryset: QuerySet) -> Vectors:
    """The embeddings of `queryset`'s questions, read once per bank version (a few sets kept)."""
    import numpy as np

    key = (bank_version(), str(queryset.values("pk").query))
    found = _READ.get(key)
    if found is None:
        rows = queryset.order_by().values_list("pk", "embedding", "title", "concepts", "slug")
        pks = []
        blobs = []
        head_counts: dict[str, int] = {}
        questions = 0
        for pk, blob, title, concepts, slug in rows:
            questions += 1
            head = {*words_of(title), *words_of(slug.replace("-", " "))}
            for concept in concepts if isinstance(concepts, list) else []:
                head.update(words_of(str(concept)))
            for word in head:
                head_counts[word] = head_counts.get(word, 0) + 1
            if blob is not None and len(blob) == encoder_module.DIMENSIONS * 2:
                pks.append(pk)
                blobs.append(bytes(blob))
        matrix = (
            np.frombuffer(b"".join(blobs), dtype="<f2")
            .reshape(len(pks), encoder_module.DIMENSIONS)
            .astype(np.float32)
        )
        found = Vectors(pks, matrix, head_counts, questions)
        with _READ_LOCK:
            while len(_READ) >= 4:
                _READ.pop(next(iter(_READ)))
            _READ[key] = found
    return found


def similarities(queryset: QuerySet, text: str) -> Similar | None:
    """Every question of `queryset` with its cosine similarity to `text`, most similar first; None
    without the encoder."""
    model = encoder_module.encoder()
    if model is None:
        return None
    found = vectors(queryset)
    return Similar(found.matrix @ model.query(text), found)


def distinctive(terms: list[Term], found: Vectors) -> bool:
    """Whether the query names something the bank holds: a PyTorch name, a phrase of the synonyms
    file, a slip of a title's word, or a word that stands in few questions' titles, concepts or
    slugs ("einsum", not "memory" or "loss")."""
    rare = max(DISTINCTIVE_MIN, DISTINCTIVE_SHARE * found.questions)
    for term in terms:
        if term.foreign:
            continue
        if not term.plain or term.marks:
            return True
        counts = [found.head_counts.get(w, 0) for w in words_of(term.phrases[0])]
        if counts and 0 < min(counts) <= rare:
            return True
    return False


def fuse(full_text: list[int], similar: Similar, terms: list[Term]) -> list[int]:
    """The full-text results and the questions nearest in meaning, merged by reciprocal rank."""
    best = similar.best
    if best < SEMANTIC_WEAK and not distinctive(terms, similar.vectors):
        # Words the bank also uses, meaning nothing it is about ("memory loss in old age").
        return []
    if not full_text and best < SEMANTIC_STRONG:
        return []
    floor = max(SEMANTIC_WEAK, best - SEMANTIC_MARGIN)
    nearest = similar.nearest(SEMANTIC_EXTRA)
    scores: dict[int, float] = {}
    for rank, (pk, semantic_rank) in enumerate(
        zip(full_text, similar.ranks(full_text), strict=True), 1
    ):
        scores[pk] = FULL_TEXT_WEIGHT / (RRF_K + rank) + SEMANTIC_WEIGHT / (RRF_K + semantic_rank)
    for rank, (pk, score) in enumerate(nearest, 1):
        if pk not in scores and score >= floor:
            scores[pk] = SEMANTIC_WEIGHT / (RRF_K + rank)
    return sorted(scores, key=lambda pk: -scores[pk])


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
            stale.append((pk, text, title))
    prime([(text, title) for _, text, title in stale])
    model = queryset.model
    changed = []
    for pk, text, title in stale:
        question = model(pk=pk)
        question.embedding = embed(text, title)
        question.embedding_key = embedding_key(text)
        changed.append(question)
    model.objects.bulk_update(changed, ["embedding", "embedding_key"], batch_size=500)
    return len(changed)
