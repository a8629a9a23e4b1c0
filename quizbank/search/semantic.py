"""What a question means: its embedding, and the questions nearest a query's.

Each question's embedding (encoder.py) is computed from its title, concepts, prompt and the first
part of its answer, and stored with it as 384 float16 numbers (`Question.embedding`), beside the
hash of the text it was computed from (`embedding_key`), so an unchanged question is never
encoded again. Encoding costs milliseconds a question, so a save does not pay it: `load_bank`
encodes its changed questions together (`prime`, `fill`), and a question saved otherwise (the
admin, a test's factory) is encoded by the first search that reads it (`vectors`). A search reads
the embeddings of the questions the user may see once per bank version, as one matrix, and scores
a query (embedded once, cached) against all of them with one product.

A learner describing a symptom ("my loss goes to nan after a few hundred steps") is often nearest
not to what a question asks but to what goes wrong in it: why it is asked, its hints, its answer's
common mistakes and its wrong solutions' misconceptions and corrections; or to one of the lines its
curators wrote of how learners ask it in their own words (`asked_as`). Each of those passages is
encoded on its own (`symptom_texts`; a question's few dozen at most), stored together
(`Question.symptom_embeddings`), and a question's symptom score is its best passage's (scored in
two steps in a bank of many thousand questions: `Vectors.passage_scores`). They depend
on the hints and the exercise, saved after the question, so a save clears them and `fill` (the end
of load_bank) or the first search that reads the question computes them.

`fuse` merges four rankings by reciprocal rank: the full-text ranker's (postgres.py or
fallback.py: strict, exact names and slips first), BM25's (bm25.py: any of the words, no
cut-off), meaning's and the symptom passages'; and `answerable` answers nothing for a query that
neither means anything the bank is about nor names anything it holds (read from the questions'
own embeddings only: the passages, many and loosely worded, are near more everyday phrases).
Every figure below was set on the main, dev, dev-v3 and dev-v4 query sets
(bench/search_quality.py), never on the held-out ones.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from ..caching import bank_version
from . import encoder as encoder_module
from . import runtime
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
# The symptom passages' ranking: it took the dev-v3 and dev-v4 sets' top-5 from 95.8% and 94.8%
# to 97.5% and 96.6% on PostgreSQL (94.2% and 91.4% to 96.7% and 93.1% on SQLite); at half
# weight, or at half weight where full text found something, or without why_asked, it found
# fewer. It costs a few keyword queries their first place to a question whose mistakes name the
# same thing (held-out top-1 97.6% to 92.9%).
SYMPTOM_WEIGHT = 1.0
# Which passages, and how they are read (a change re-encodes them at the next load_bank).
SYMPTOM_RECIPE = "all-MiniLM-L6-v2/symptoms/2"
# The most passages kept of one question (its first ones: asked_as lines, why asked, hints,
# mistakes, wrong solutions), so a question with many wrong solutions does not weigh more or cost
# much.
MAX_SYMPTOMS = 52
CANDIDATES = 20
FUSED_SHARE = 0.3
# Up to this many passages, every one is scored against the query (the real bank holds about
# 5,000: a fraction of a millisecond). Above it they are scored in two steps
# (`Vectors.passage_scores`): every passage on its first COARSE_DIMENSIONS principal components,
# a quarter of the bytes to read (a sixteenth as 8-bit integers in onnxruntime), then the
# SHORTLIST questions whose best coarse passage is highest exactly, each on all its passages; the
# others rank as having none. 10,000 questions hold about 200,000 passages: one product over all
# of them reads 300 MB (bench/api.py times both).
EXACT_PASSAGES = 60_000
COARSE_DIMENSIONS = 96
SHORTLIST = 256
# The principal components are those of at most this many passages (evenly spaced).
BASIS_SAMPLE = 20_000
# Whether a query is about the bank (`answerable`): a linear score of what meaning and words say,
# fitted (logistic regression) on the main, dev, dev-v3, dev-v4 and dev-v5 sets' on-topic and
# off-topic queries, both rankers pooled. Fitted with each set left out in turn and scored on it,
# it answered 16 of the 400 off-topic queries and turned away 8 of the 1,393 on-topic ones it
# would have found; fitted so without the passage and background signals, 29 and 25. Each weight
# is on a cosine similarity or a 0/1 flag:
ABOUT_WEIGHTS = {
    # the query's best cosine similarity to any question
    "best": 13.87,
    # its best to the questions its words find first (BM25's and full text's first three):
    # "freeze bread" finds freeze-layers by its words, whose meaning is far from it
    "matched": 3.19,
    # full text finds something (its coverage rule passed)
    "full_text": 1.21,
    # ...and the query names something the bank holds (a PyTorch name, a synonyms phrase, a
    # corrected slip)
    "named": 4.39,
    # a word no title, prompt or answer uses in any form ("guitar")
    "unused": -2.68,
    # the share of its terms that no title, concept or slug uses
    "foreign": -1.82,
    # its best to a symptom passage or a line of how a learner asks a question
    "passage": 18.15,
    # its best to a background phrase (BACKGROUND): "a torch for camping" is nearer "how to
    # light a propane torch" than any question about torch
    "background": -23.34,
}
ABOUT_BIAS = -3.97
ABOUT_THRESHOLD = 0.25
# The first six signals alone, for a bank without passages (fitted on the main, dev, dev-v3 and
# dev-v4 sets, both rankers pooled, before asked_as and the background).
WORDS_ABOUT_WEIGHTS = {
    "best": 6.74,
    "matched": 4.78,
    "full_text": 1.93,
    "named": 0.89,
    "unused": -1.76,
    "foreign": -1.46,
}
WORDS_ABOUT_BIAS = -2.80
WORDS_ABOUT_THRESHOLD = 0.25
# A query this close in meaning to a question is always answered (no off-topic dev query reached
# 0.44), unless a background phrase is closer still: "which torch for camping" is 0.455 from a
# question about torch and 0.665 from a camping phrase. That condition kept every on-topic query
# of the main and dev sets answered and took dev-v5's off-topic queries answered from 5 to 2 of
# 60 (PostgreSQL; 6 to 3 with the Python ranker).
SEMANTIC_STRONG = 0.45
# The nearest questions alone (the "semantic" column of bench/search_quality.py) need this much.
SEMANTIC_WEAK = 0.3
# The first results of the word rankers whose meaning `answerable` reads.
MATCHED = 3
# Phrases that are not about the bank, one a line: other senses of its words ("a torch for
# camping"), programming and data topics it does not cover, everyday questions. Written apart
# from every query set. A query nearer one of them than to the bank is off topic, however many
# of its words the bank uses.
BACKGROUND = Path(__file__).with_name("background.txt")

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


_MISTAKES = re.compile(r"^## Common mistakes[ \t]*$(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
_BULLET = re.compile(r"^\s*[-*] ", re.MULTILINE)


def _plain(text: str) -> str:
    return " ".join(_MARKDOWN.sub(" ", text).split())


def symptom_texts(
    why_asked: str,
    answer: str,
    hints: list[str],
    wrong_solutions: dict[str, str] | None,
    asked_as: list[str] | None = None,
) -> list[str]:
    """The passages of a question in a learner's words or that say what goes wrong, each encoded
    on its own: how a learner asks it (`asked_as`, each line), why it is asked, each hint, each of
    the answer's common mistakes, and each wrong solution's misconception with its correction."""
    from ..bank.notes import wrong_solution_notes

    passages = [*(asked_as or []), why_asked, *hints]
    mistakes = _MISTAKES.search(answer)
    if mistakes:
        passages += _BULLET.split(mistakes.group(1))
    for _, code in sorted((wrong_solutions or {}).items()):
        notes = wrong_solution_notes(code)
        if notes:
            passages.append(f"{notes['misconception']} {notes.get('correction', '')}")
    texts = (_plain(p) for p in passages)
    return list(dict.fromkeys(t for t in texts if t))[:MAX_SYMPTOMS]


def symptom_key(texts: list[str]) -> str:
    return hashlib.sha256("\n".join([SYMPTOM_RECIPE, *texts]).encode()).hexdigest()


def question_symptom_texts(question: Any) -> list[str]:
    """`symptom_texts` of a saved question (its hints and exercise read from the database)."""
    hints = [h.text for h in sorted(question.hints.all(), key=lambda h: h.order)]
    # The reverse one-to-one's "does not exist" is an AttributeError too: getattr's default.
    exercise = getattr(question, "exercise", None)
    wrong = exercise.wrong_solutions if exercise is not None else None
    return symptom_texts(question.why_asked, question.answer, hints, wrong, question.asked_as)


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


def forget_symptoms(question: Any) -> None:
    """A save may change what the symptom passages are read from (why it is asked, the answer;
    the hints and exercise are saved after it): they are computed again by `fill` or the first
    search that reads the question."""
    question.symptom_embeddings = None
    question.symptom_key = ""


@dataclass
class Vectors:
    """The embeddings of the questions a user may see, one row each (those without one left
    out), and their symptom passages'."""

    pks: list[int]
    matrix: np.ndarray
    # The symptom passages (one row each) and the row of `pks` each belongs to, in order: each
    # question's passages are one run. (Kept in float32: numpy converted a shortlist's float16
    # rows more slowly than it scored every passage's coarse projection.)
    symptoms: np.ndarray | None = None
    owners: np.ndarray | None = None
    _rows: dict[int, int] | None = None
    # Where each question's run of passages starts and ends (`owners[starts]`: their rows).
    starts: np.ndarray | None = None
    ends: np.ndarray | None = None
    # Above EXACT_PASSAGES: the principal components (384 x COARSE_DIMENSIONS) and the passages
    # projected on them: as 8-bit integers in onnxruntime where it is installed (`coarse_product`,
    # a quarter of the bytes again, and a product four times as fast), else as float32 (`coarse`).
    basis: np.ndarray | None = None
    coarse: np.ndarray | None = None
    coarse_product: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        import numpy as np

        if self.symptoms is None or self.owners is None or not len(self.symptoms):
            self.symptoms = None
            return
        owners = self.owners
        self.starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        self.ends = np.r_[self.starts[1:], len(owners)]
        if len(self.symptoms) > EXACT_PASSAGES and len(self.starts) > SHORTLIST:
            sample = self.symptoms[:: max(1, len(self.symptoms) // BASIS_SAMPLE)]
            # The directions that carry most of the passages' dot products: the top eigenvectors
            # of their uncentred second moment.
            _, vectors = np.linalg.eigh(sample.T @ sample)
            self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :COARSE_DIMENSIONS])
            coarse = self.symptoms @ self.basis
            self.coarse_product = runtime.int8_product(coarse)
            if self.coarse_product is None:
                self.coarse = coarse

    def rows(self) -> dict[int, int]:
        """Each question's row."""
        if self._rows is None:
            self._rows = {pk: n for n, pk in enumerate(self.pks)}
        return self._rows

    def passage_scores(self, query: np.ndarray, *, exact: bool = False) -> np.ndarray | None:
        """Each question's best passage's cosine similarity to `query` (-1 where it has none, or,
        above EXACT_PASSAGES, where it is not among the SHORTLIST whose coarse best is highest;
        `exact` scores every passage whatever their number); None where no question has a
        passage."""
        import numpy as np

        if self.symptoms is None or self.starts is None or self.ends is None:
            return None
        assert self.owners is not None
        scores = np.full(len(self.pks), -1.0, dtype=np.float32)
        if exact or self.basis is None:
            best = np.maximum.reduceat(self.symptoms @ query, self.starts)
            scores[self.owners[self.starts]] = best
            return scores
        projected = query @ self.basis
        if self.coarse_product is not None:
            products = self.coarse_product(projected)
        else:
            assert self.coarse is not None
            products = self.coarse @ projected
        coarse = np.maximum.reduceat(products, self.starts)
        runs = np.argpartition(-coarse, SHORTLIST - 1)[:SHORTLIST]
        lengths = self.ends[runs] - self.starts[runs]
        firsts = np.cumsum(lengths) - lengths
        # The shortlisted runs' rows, one after another.
        rows = np.repeat(self.starts[runs] - firsts, lengths) + np.arange(lengths.sum())
        exact = self.symptoms[rows] @ query
        scores[self.owners[self.starts[runs]]] = np.maximum.reduceat(exact, firsts)
        return scores


@dataclass
class Similar:
    """A query's cosine similarity to each question (numpy, in `vectors` order). Only the few
    nearest are listed in Python: on 10,000 questions a list of them all cost more than the
    product."""

    scores: np.ndarray
    vectors: Vectors
    # Each question's best symptom passage's similarity (-1 where it has none), when read.
    symptom_scores: np.ndarray | None = None
    # The query's own unit vector.
    query: np.ndarray | None = None

    @property
    def best(self) -> float:
        return float(self.scores.max()) if len(self.scores) else 0.0

    @property
    def has_passages(self) -> bool:
        """Whether a question of these has a symptom passage (a score of -1 stands for none)."""
        return self.symptom_scores is not None and bool((self.symptom_scores > -1).any())

    @property
    def best_passage(self) -> float:
        """The best symptom passage's similarity (the best question's where none has one)."""
        if not self.has_passages:
            return self.best
        assert self.symptom_scores is not None
        return float(self.symptom_scores.max())

    def of(self, pks: list[int]) -> list[float]:
        """The similarities of these questions (those without an embedding left out)."""
        rows = self.vectors.rows()
        return [float(self.scores[rows[pk]]) for pk in pks if pk in rows]

    def nearest(self, count: int, *, symptoms: bool = False) -> list[tuple[int, float]]:
        """The `count` most similar questions, most similar first (by their best symptom
        passage with `symptoms`: only questions that have one)."""
        import numpy as np

        scores = self.scores
        if symptoms:
            if self.symptom_scores is None:
                return []
            scores = self.symptom_scores
        count = min(count, int((scores > -1).sum()) if symptoms else len(scores))
        if not count:
            return []
        chosen = np.argpartition(-scores, count - 1)[:count]
        chosen = chosen[np.argsort(-scores[chosen], kind="stable")]
        return [(self.vectors.pks[i], float(scores[i])) for i in chosen]


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
        rows = list(queryset.order_by("pk").values_list("pk", "embedding", "symptom_embeddings"))
        missing = [pk for pk, blob, _ in rows if blob is None][:FILL_ON_SEARCH]
        filled = _fill_missing(queryset.model, missing) if missing else {}
        lacking = [pk for pk, _, blob in rows if blob is None][:FILL_ON_SEARCH]
        symptoms_filled = _fill_symptoms(queryset.model, lacking) if lacking else {}
        size = encoder_module.DIMENSIONS * 2
        pks = []
        blobs = []
        passages: list[list[bytes]] = []
        for pk, blob, symptom_blob in rows:
            blob = filled.get(pk, blob)
            if blob is not None and len(blob) == size:
                symptom_blob = bytes(symptoms_filled.get(pk, symptom_blob) or b"")
                if len(symptom_blob) % size:
                    symptom_blob = b""
                passages.append(
                    [symptom_blob[i : i + size] for i in range(0, len(symptom_blob), size)]
                )
                pks.append(pk)
                blobs.append(bytes(blob))
        # A passage several questions share (a stock "why asked") tells none of them apart: with
        # it, every one of them would rank alike for any query near it.
        shared = Counter(p for held in passages for p in set(held))
        symptom_blobs = []
        owners = []
        for row, held in enumerate(passages):
            own = [p for p in held if shared[p] == 1]
            symptom_blobs += own
            owners += [row] * len(own)
        found = Vectors(
            pks,
            _matrix(b"".join(blobs)),
            _matrix(b"".join(symptom_blobs)),
            np.array(owners, dtype=np.int64),
        )
        with _READ_LOCK:
            while len(_READ) >= 4:
                _READ.pop(next(iter(_READ)))
            _READ[key] = found
    return found


def _matrix(blob: bytes) -> np.ndarray:
    import numpy as np

    vectors = np.frombuffer(blob, dtype="<f2").reshape(-1, encoder_module.DIMENSIONS)
    return vectors.astype(np.float32)


def _symptom_blob(texts: list[str]) -> bytes:
    """The stored form of a question's symptom passages' embeddings: one row each."""
    return b"".join(vector for vector in map(embed, texts) if vector is not None)


def _fill_symptoms(model: Any, pks: list[int]) -> dict[int, bytes]:
    """Encode and store the symptom passages of these questions (saved since they were read);
    each is stored only if the question was not saved again meanwhile."""
    # The passages are read from its text, hints and exercise, not from what is stored.
    questions = (
        model.objects.filter(pk__in=pks)
        .defer(*model.DERIVED_FIELDS)
        .prefetch_related("hints")
        .select_related("exercise")
    )
    read = [(q, question_symptom_texts(q)) for q in questions]
    prime([t for _, texts in read for t in texts])
    if encoder_module.encoder() is None:
        return {}
    filled = {}
    for question, texts in read:
        blob = _symptom_blob(texts)
        stored = model.objects.filter(
            pk=question.pk, updated_at=question.updated_at, symptom_embeddings__isnull=True
        ).update(symptom_embeddings=blob, symptom_key=symptom_key(texts))
        if stored:
            filled[question.pk] = blob
    return filled


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
    waiting = start_similarities(queryset, text)
    return waiting() if waiting is not None else None


# Threads that encode and score queries while the request's own thread waits on the database
# (`start_similarities`): numpy and the tokenizer release the interpreter while they compute.
# One pool per process, made at its first search (a pool made before a fork would wait in the
# child on threads that only the parent has).
SCORING_THREADS = 4
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool() -> ThreadPoolExecutor:
    pid = os.getpid()
    pool = _POOLS.get(pid)
    if pool is None:
        with _READ_LOCK:
            pool = _POOLS.get(pid)
            if pool is None:
                _POOLS.clear()
                pool = _POOLS[pid] = ThreadPoolExecutor(
                    SCORING_THREADS, thread_name_prefix="search-meaning"
                )
    return pool


def start_similarities(queryset: QuerySet, text: str) -> Callable[[], Similar] | None:
    """Start `similarities` in a scoring thread and return what waits for it (and raises what it
    raised); None without the encoder. The query's forward pass and the products run while
    PostgreSQL ranks its words on its own core. What reads the database (the questions' vectors,
    once per bank version) runs here, in the caller's thread and connection, first."""
    model = encoder_module.encoder()
    if model is None:
        return None
    found = vectors(queryset)
    return _pool().submit(_score, model, found, text).result


def _score(model: encoder_module.Encoder, found: Vectors, text: str) -> Similar:
    query = model.query(text)
    return Similar(found.matrix @ query, found, found.passage_scores(query), query)


def _background_lines() -> list[str]:
    lines = (line.strip() for line in BACKGROUND.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


_BACKGROUND: dict[str, np.ndarray] = {}


def background() -> np.ndarray | None:
    """The background phrases' unit vectors (one row each), encoded once per process; None
    without the encoder."""
    model = encoder_module.encoder()
    if model is None:
        return None
    found = _BACKGROUND.get("vectors")
    if found is None:
        found = model.encode(_background_lines())
        found.setflags(write=False)
        with _READ_LOCK:
            _BACKGROUND["vectors"] = found
    return found


def background_best(similar: Similar) -> float:
    """The query's best cosine similarity to a background phrase (0 where none is read)."""
    phrases = background()
    if phrases is None or similar.query is None or not len(phrases):
        return 0.0
    return float((phrases @ similar.query).max())


def answerable(similar: Similar, full_text: list[int], words: list[int], terms: list[Term]) -> bool:
    """Whether the query is about something the bank holds, or answers nothing (the empty state
    suggests popular questions): a strong semantic match (SEMANTIC_STRONG) that no background
    phrase beats always is; otherwise ABOUT_WEIGHTS weigh meaning (the best match, the match of
    what the words find, the best passage) against words (full text's coverage rule, names, words
    the bank never uses) and the background. A bank whose questions have no passages (a few
    questions saved without hints or asked_as lines) is read by the signals it has
    (WORDS_ABOUT_WEIGHTS): the passage and background weights were fitted on a bank where every
    question has them."""
    best = similar.best
    if best >= SEMANTIC_STRONG and best > background_best(similar):
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
    weights, bias, threshold = WORDS_ABOUT_WEIGHTS, WORDS_ABOUT_BIAS, WORDS_ABOUT_THRESHOLD
    if similar.has_passages:
        weights, bias, threshold = ABOUT_WEIGHTS, ABOUT_BIAS, ABOUT_THRESHOLD
        signals["passage"] = similar.best_passage
        signals["background"] = background_best(similar)
    score = bias + sum(weights[name] * value for name, value in signals.items())
    return score >= threshold


def fuse(full_text: list[int], words: list[int], similar: Similar, terms: list[Term]) -> list[int]:
    """The full-text results, BM25's, the questions nearest in meaning and those whose symptom
    passages are, merged by reciprocal rank; those that only BM25 or meaning found are cut off
    under FUSED_SHARE of the best fused score."""
    if not answerable(similar, full_text, words, terms):
        return []
    scores: dict[int, float] = {}
    rankings = (
        (full_text, FULL_TEXT_WEIGHT),
        (words, WORDS_WEIGHT),
        ([pk for pk, _ in similar.nearest(CANDIDATES)], SEMANTIC_WEIGHT),
        (
            [pk for pk, _ in similar.nearest(CANDIDATES, symptoms=True)],
            SYMPTOM_WEIGHT,
        ),
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
    encoder was missing when they were saved, or the recipe changed), and their symptom passages'
    (`fill_symptoms`); how many embeddings were set."""
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
    fill_symptoms(queryset)
    return len(changed)


def fill_symptoms(queryset: QuerySet) -> int:
    """Compute the symptom passages' embeddings that `queryset`'s questions lack or computed from
    other passages (a hint or a wrong solution changed since); how many questions were set."""
    if encoder_module.encoder() is None:
        return 0
    questions = queryset.prefetch_related("hints").select_related("exercise")
    stale = []
    for question in questions.order_by("pk"):
        texts = question_symptom_texts(question)
        if question.symptom_embeddings is None or symptom_key(texts) != question.symptom_key:
            stale.append((question.pk, texts))
    prime([t for _, texts in stale for t in texts])
    model = queryset.model
    changed = []
    for pk, texts in stale:
        question = model(pk=pk)
        question.symptom_embeddings = _symptom_blob(texts)
        question.symptom_key = symptom_key(texts)
        changed.append(question)
    model.objects.bulk_update(changed, ["symptom_embeddings", "symptom_key"], batch_size=200)
    return len(changed)
