"""Word matching without a cut-off: Okapi BM25 over the questions a user may see, in Python.

The full-text rankers (postgres.py, fallback.py) are strict on purpose: a question must hold most
of the query's terms, so a vague word does not list the bank. A learner's own words rarely pass
that rule ("keep the backbone fixed and only train the classifier head"), so semantic.py fuses
their results with this ranking, which scores every question holding any of the terms by how
rare each term is and how often it stands there, and with the encoder's.

A question is read as its title (counted three times), concepts (twice), slug, prompt, the
first part of its answer's prose and the lines saying how a learner asks it (`asked_as`), as
words by fallback.py's light stem, function words left out.
A query is read as its terms (terms.py): each phrase of a term, the synonyms file's group
included, and the slips the ranker corrected, so both rankers read the query alike.

Each question's words and how often each counts are computed when it is saved and stored with it
(`Question.bm25_words`, with the RECIPE they were read by), as its embedding is. The index (each
word's questions and their BM25 term weights, as numpy arrays) is built once per bank version and
set of visible questions (a few kept), from those stored counts, which a process keeps across bank
versions and reads again only for a question saved since (its `updated_at`; a bulk `update()` of a
question's text is not seen until the process restarts). A question without stored counts, or
with counts of another recipe (saved before they were kept, bulk-created), is read from its text
once and its counts stored. A search then adds one array update per query word.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.db.models.functions import Substr

from ..caching import bank_version
from .fallback import NAME_JOINER, word_stem
from .terms import FUNCTION_WORDS, WORD_RE, Term

if TYPE_CHECKING:
    import numpy as np

# How a question's words are read (fields, weights, stems): a change here is a new recipe, and
# the stored counts of another are read again from the question's text.
RECIPE = "bm25/2"
K1 = 1.2
B = 0.75
# How a learner asks it (`Question.asked_as`): its words count as often as the prompt's.
ASKED_AS_WEIGHT = 1
# How often each field's words count, and how much of the answer is read (prose only; code
# blocks are left out, their identifiers are the prompt's and the title's already).
FIELD_WEIGHTS = {
    "title": 3,
    "concepts": 2,
    "slug": 1,
    "prompt": 1,
    "answer": 1,
    "asked_as": ASKED_AS_WEIGHT,
}
ANSWER_PART = 1500
# Read of the answer from the database, before its code blocks are taken out.
ANSWER_READ = 6000
_CODE = re.compile(r"```.*?(?:```|$)", re.S)


# Stemming each word of 10,000 questions again was three quarters of building the index.
_stem = functools.lru_cache(maxsize=200_000)(word_stem)


def words_of(text: str) -> list[str]:
    """fallback.words_of, with the stems remembered."""
    return [_stem(w) for w in WORD_RE.findall(NAME_JOINER.sub(" ", text.lower()))]


@dataclass
class Index:
    pks: list[int]
    # word -> (row numbers, BM25 weight of the word in each, idf already applied)
    postings: dict[str, tuple[np.ndarray, np.ndarray]]


def _lines(values: object) -> str:
    return " ".join(str(v) for v in values) if isinstance(values, list) else ""


def document_words(
    title: str, concepts: object, slug: str, prompt: str, answer: str, asked_as: object = None
) -> Counter:
    """A question's words, each counted as often as it stands, by field weight."""
    prose = _CODE.sub(" ", answer[:ANSWER_READ])[:ANSWER_PART]
    concept_text = _lines(concepts)
    fields = {
        "title": title,
        "concepts": concept_text,
        "slug": slug.replace("-", " "),
        "prompt": prompt,
        "answer": prose,
        "asked_as": _lines(asked_as),
    }
    counts: Counter = Counter()
    for name, text in fields.items():
        weight = FIELD_WEIGHTS[name]
        for word, count in Counter(words_of(text)).items():
            if word not in FUNCTION_WORDS:
                counts[word] += count * weight
    return counts


def stored_words(
    title: str, concepts: object, slug: str, prompt: str, answer: str, asked_as: object = None
) -> dict:
    """What `Question.bm25_words` holds: the question's words and their counts (document_words),
    and the recipe that read them."""
    counts = document_words(title, concepts, slug, prompt, answer, asked_as)
    return {"recipe": RECIPE, "counts": dict(counts)}


def refresh(question: Any) -> None:
    """Store the words of `question`'s text with it (Question.save)."""
    question.bm25_words = stored_words(
        question.title,
        question.concepts,
        question.slug,
        question.prompt,
        question.answer,
        question.asked_as,
    )


def query_words(terms: list[Term]) -> list[str]:
    """The words BM25 looks for: those of every phrase of every term and of its corrections."""
    phrases = [p for t in terms for p in [*t.phrases, *t.marks]]
    words = (w for p in phrases for w in words_of(p) if w not in FUNCTION_WORDS)
    return list(dict.fromkeys(words))


@dataclass
class _Document:
    """One question's words as numbers (`_NUMBERS`) and how often each counts, and when the
    question was saved: kept across bank versions, so a change re-reads only what changed."""

    saved: Any
    words: np.ndarray
    counts: np.ndarray


# Every word read so far, numbered; and each question read so far (by id).
_NUMBERS: dict[str, int] = {}
_DOCUMENTS: dict[int, _Document] = {}
_READ: dict[tuple[str, str], Index] = {}
_READ_LOCK = threading.Lock()
# Questions whose text is read in one query.
READ_BATCH = 500


def _document(saved: Any, counts: dict[str, float]) -> _Document:
    import numpy as np

    words = np.array([_NUMBERS.setdefault(w, len(_NUMBERS)) for w in counts], dtype=np.int32)
    return _Document(saved, words, np.fromiter(counts.values(), np.float32, len(counts)))


def _stored_counts(stored: Any) -> dict[str, float] | None:
    """The counts of a stored `bm25_words`, if it was read by this RECIPE."""
    if isinstance(stored, dict) and stored.get("recipe") == RECIPE:
        counts = stored.get("counts")
        if isinstance(counts, dict):
            return counts
    return None


def _read_text(model: Any, pks: list[int]) -> dict[int, tuple[Any, dict[str, float]]]:
    """Read these questions' words from their text (their stored counts missing or of another
    recipe), and store the counts with each, unless it was saved again meanwhile."""
    rows = (
        model.objects.filter(pk__in=pks)
        .annotate(answer_part=Substr("answer", 1, ANSWER_READ))
        .values_list(
            "pk", "updated_at", "title", "concepts", "slug", "prompt", "answer_part", "asked_as"
        )
    )
    read = {}
    for pk, at, *fields in rows:
        stored = stored_words(*fields)
        model.objects.filter(pk=pk, updated_at=at).update(bm25_words=stored)
        read[pk] = (at, stored["counts"])
    return read


def build(pks: list[int], documents: list[_Document]) -> Index:
    import numpy as np

    if not documents:
        return Index([], {})
    sizes = np.array([len(d.words) for d in documents])
    row_array = np.repeat(np.arange(len(documents), dtype=np.int32), sizes)
    word_array = np.concatenate([d.words for d in documents])
    tf = np.concatenate([d.counts for d in documents])
    lengths = np.bincount(row_array, weights=tf, minlength=len(documents)).astype(np.float32)
    norms = K1 * (1 - B + B * lengths / max(float(lengths.mean()), 1e-9))
    # Questions holding each word, and the BM25 weight of the word in each (idf applied).
    held = np.bincount(word_array, minlength=len(_NUMBERS))
    idf = np.log(1 + (len(documents) - held + 0.5) / (held + 0.5)).astype(np.float32)
    weights = idf[word_array] * tf * (K1 + 1) / (tf + norms[row_array])
    order = np.argsort(word_array, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(held)])
    row_sorted, weight_sorted = row_array[order], weights[order]
    postings = {
        word: (row_sorted[bounds[i] : bounds[i + 1]], weight_sorted[bounds[i] : bounds[i + 1]])
        for word, i in _NUMBERS.items()
        if held[i]
    }
    return Index(pks, postings)


def index(queryset: QuerySet) -> Index:
    """The BM25 index of `queryset`'s questions, built once per bank version (a few sets kept);
    only the questions saved since they were last read are read and split into words again."""
    key = (bank_version(), str(queryset.values("pk").query))
    found = _READ.get(key)
    if found is None:
        # In id order, so that ties rank alike on every database.
        saved = list(queryset.order_by("pk").values_list("pk", "updated_at"))
        stale = [pk for pk, at in saved if pk not in _DOCUMENTS or _DOCUMENTS[pk].saved != at]
        model = queryset.model
        for start in range(0, len(stale), READ_BATCH):
            rows = model.objects.filter(pk__in=stale[start : start + READ_BATCH]).values_list(
                "pk", "updated_at", "bm25_words"
            )
            read = {}
            unread = []
            for pk, at, stored in rows:
                counts = _stored_counts(stored)
                if counts is None:
                    unread.append(pk)
                else:
                    read[pk] = (at, counts)
            if unread:
                read.update(_read_text(model, unread))
            with _READ_LOCK:
                for pk, (at, counts) in read.items():
                    _DOCUMENTS[pk] = _document(at, counts)
        pks = [pk for pk, _ in saved if pk in _DOCUMENTS]
        with _READ_LOCK:
            found = build(pks, [_DOCUMENTS[pk] for pk in pks])
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
