"""Ranking elsewhere (the SQLite development default): the rules of postgres.py, in Python.

The questions' words are read here, not by an index: every question the user may see is fetched
once (its title, concepts, slug and prompt; answers only when nothing else matched), so this suits
the bank's own size, not PostgreSQL's 10,000. Words are compared by a light stem ("initializing",
"initialization" and "initialize" read alike), phrases by consecutive words; a word no title,
concept or slug holds and no prompt or answer uses is read as its nearest title word when it is a
slip of one (terms.is_typo), as a compound when the bank writes it as two words, and otherwise as
foreign. Coverage, field weights, proximity, title similarity and the cut-off are postgres.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db.models import QuerySet

from ..caching import bank_version
from .terms import (
    MAX_LENGTH,
    MIN_SCORE,
    MIN_SHARE_OF_BEST,
    PROXIMITY_WEIGHT,
    WORD_RE,
    Term,
    is_typo,
    min_coverage,
    weigh_foreign,
)

# A dot or slash between two word characters splits a name into its words, as the PostgreSQL
# trigger does (quizbank_search_text): "nn.Module" is "nn module".
NAME_JOINER = re.compile(r"(?<=\w)[./](?=\w)")
ENDINGS = ("izations", "ization", "ations", "ation", "ings", "ing", "ies", "es", "ed", "s", "e")


def word_stem(word: str) -> str:
    """A light stem, enough to read forms of a word alike ("gradients", "gradient")."""
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)] + ("y" if ending == "ies" else "")
    return word


def words_of(text: str) -> list[str]:
    return [word_stem(w) for w in WORD_RE.findall(NAME_JOINER.sub(" ", text.lower()))]


@dataclass
class Fields:
    """One question's words, by field: the head (title, concepts, slug) and the prompt."""

    pk: int
    slug: str
    title: list[str]
    head: list[list[str]]
    prompt: list[str]
    title_trigrams: set[str] = field(default_factory=set)

    def holds(self, phrase: list[str], where: str) -> bool:
        texts = self.head if where == "head" else [self.prompt]
        return any(_contains(text, phrase) for text in texts)

    def near(self, a: list[list[str]], b: list[list[str]]) -> bool:
        """Whether a phrase of `a` and one of `b` stand within a word of each other."""
        for text in [*self.head, self.prompt]:
            ends = {i + len(p) for p in a for i in _starts(text, p)}
            starts = {i for p in b for i in _starts(text, p)}
            if any(0 <= s - e <= 1 for s in starts for e in ends):
                return True
        return False


def ranked(queryset: QuerySet, terms: list[Term], text: str) -> tuple[list[int], list[Term]]:
    """The ids of the questions of `queryset` about `terms`, best first, cut off under a share of
    the best (MIN_SHARE_OF_BEST), and the terms searched."""
    questions, head_words, prompt_words = _questions(queryset)
    phrases = _read(terms, queryset, head_words, prompt_words)
    weigh_foreign(terms)
    total = sum(t.weight for t in terms)
    floor = min_coverage(terms)
    query_trigrams = trigrams(" ".join(WORD_RE.findall(text.lower()[:MAX_LENGTH])))
    scored: list[tuple[float, str, int]] = []
    for question in questions:
        coverage = score = 0.0
        for term, forms in zip(terms, phrases, strict=True):
            if any(question.holds(p, "head") for p in forms):
                score += term.weight
            elif any(question.holds(p, "prompt") for p in forms):
                score += term.weight * 0.4
            else:
                continue
            coverage += 0.0 if term.unused else term.weight
        if coverage <= floor or score < MIN_SCORE * total:
            continue
        proximity = sum(
            PROXIMITY_WEIGHT * min(terms[i].weight, terms[i + 1].weight)
            for i in range(len(terms) - 1)
            if question.near(phrases[i], phrases[i + 1])
            or question.near(phrases[i + 1], phrases[i])
        )
        rank = (score + proximity) / total + _similarity(question.title_trigrams, query_trigrams)
        scored.append((rank, question.slug, question.pk))
    if not scored:
        return _answers(queryset, terms, phrases, questions), terms
    best = max(rank for rank, _, _ in scored)
    kept = sorted(
        (r for r in scored if r[0] >= best * MIN_SHARE_OF_BEST), key=lambda r: (-r[0], r[1])
    )
    return [pk for _, _, pk in kept], terms


# The questions' words, read once per bank version and set of visible questions (a few kept).
_READ: dict[tuple[str, str], tuple[list[Fields], set[str], set[str]]] = {}
_ANSWER_WORDS: dict[tuple[str, str], set[str]] = {}


def _questions(queryset: QuerySet) -> tuple[list[Fields], set[str], set[str]]:
    """The questions of `queryset` read as words, with the words of all their heads (title,
    concepts, slug) and of all their prompts."""
    key = (bank_version(), str(queryset.values("pk").query))
    if key not in _READ:
        rows = queryset.values_list("pk", "slug", "title", "concepts", "prompt")
        questions = [_fields(*row) for row in rows]
        head_words = {w for q in questions for text in q.head for w in text}
        prompt_words = {w for q in questions for w in q.prompt}
        while len(_READ) >= 4:
            _READ.pop(next(iter(_READ)))
        _READ[key] = (questions, head_words, prompt_words)
    return _READ[key]


def _answer_words(queryset: QuerySet) -> set[str]:
    key = (bank_version(), "answers:" + str(queryset.values("pk").query))
    if key not in _ANSWER_WORDS:
        _ANSWER_WORDS.clear()
        answers = queryset.values_list("answer", flat=True)
        _ANSWER_WORDS[key] = {w for answer in answers for w in words_of(answer)}
    return _ANSWER_WORDS[key]


def trigrams(text: str) -> set[str]:
    """pg_trgm's trigrams of `text`: each word padded with two spaces before and one after."""
    return {
        padded[i : i + 3]
        for word in WORD_RE.findall(text.lower())
        for padded in [f"  {word} "]
        for i in range(len(padded) - 2)
    }


def _similarity(a: set[str], b: set[str]) -> float:
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared) if a or b else 0.0


def _fields(pk: int, slug: str, title: str, concepts: object, prompt: str) -> Fields:
    concept_texts = [str(c) for c in concepts] if isinstance(concepts, list) else []
    return Fields(
        pk=pk,
        slug=slug,
        title=words_of(title),
        head=[words_of(title), *map(words_of, concept_texts), words_of(slug.replace("-", " "))],
        prompt=words_of(prompt),
        title_trigrams=trigrams(title),
    )


def _read(
    terms: list[Term], queryset: QuerySet, head_words: set[str], prompt_words: set[str]
) -> list[list[list[str]]]:
    """Each term's phrases as stemmed words; a word the bank does not hold read as its slip, as
    its compound, or marked foreign (and unused when no answer holds it either)."""
    answers: set[str] | None = None
    read = []
    for term in terms:
        forms = [words_of(p) for p in term.phrases]
        forms = [f for f in forms if f]
        if term.plain and not any(f[0] in head_words for f in forms):
            # A form of a title word the light stem reads apart ("distilation", "distil":
            # "distill"), as PostgreSQL's stemmer reads them alike.
            forms += [[w] for f in forms for w in _extensions(f[0], head_words)]
        if term.plain and not any(f[0] in head_words for f in forms):
            word = forms[0][0] if forms else ""
            if word not in prompt_words:
                if answers is None:
                    answers = _answer_words(queryset)
                used = word in answers
                fixed = None if used else _fix(term.phrases[0], head_words)
                if fixed:
                    forms.append(fixed)
                    term.marks += [w for w in fixed if len(w) >= 4]
                else:
                    term.foreign = len(term.phrases[0]) >= 4
                    term.unused = term.foreign and not used
            else:
                term.foreign = len(term.phrases[0]) >= 4
        elif not term.plain:
            # One word of a name may be a slip ("autograd.Fucntion").
            for phrase in term.phrases:
                stems = words_of(phrase)
                if len(stems) == 1 and phrase.isalpha() and stems[0] not in head_words:
                    if answers is None:
                        answers = _answer_words(queryset)
                    fixed = None if stems[0] in answers else _fix(phrase, head_words)
                    if fixed and fixed not in forms:
                        forms.append(fixed)
                        term.marks += [w for w in fixed if len(w) >= 4]
        read.append(forms)
    return read


# A stem begins the title words it is a form of, this many letters short at most: a doubled
# consonant or a dropped "e" ("distil": "distill"), not another word ("token": "tokeniz").
MAX_EXTENSION = 2


def _extensions(stem: str, head_words: set[str]) -> list[str]:
    """The title words that `stem` (of a word no title, concept or slug holds) begins, a letter
    or two short: the same word, by PostgreSQL's stem (quizbank_searchterm LIKE stem%)."""
    if len(stem) < 4 or stem.isdigit():
        return []
    return sorted(
        w for w in head_words if w.startswith(stem) and 0 < len(w) - len(stem) <= MAX_EXTENSION
    )


def _fix(typed: str, head_words: set[str]) -> list[str] | None:
    """The title word `typed` misspells, or the two words of a compound, if any."""
    if len(typed) >= 6:
        for i in range(2, len(typed) - 1):
            left, right = word_stem(typed[:i]), word_stem(typed[i:])
            if left in head_words and right in head_words and len(typed[i:]) >= 3:
                return [left, right]
    if len(typed) < 5 or typed.isdigit():
        return None
    for word in sorted(head_words):
        if is_typo(typed, word) or is_typo(word_stem(typed), word):
            return [word]
    return None


def _answers(
    queryset: QuerySet, terms: list[Term], phrases: list[list[list[str]]], questions: list[Fields]
) -> list[int]:
    """Nothing is about these terms: answers that hold every one of them, unless a question holds
    some of them (then nothing matched well enough)."""
    if any(
        q.holds(p, w)
        for q in questions
        for forms in phrases
        for p in forms
        for w in ("head", "prompt")
    ):
        return []
    found = []
    for pk, answer in queryset.order_by("slug").values_list("pk", "answer"):
        words = words_of(answer)
        if all(any(_contains(words, p) for p in forms) for forms in phrases):
            found.append(pk)
    return found


def _starts(text: list[str], phrase: list[str]) -> list[int]:
    n = len(phrase)
    return [i for i in range(len(text) - n + 1) if text[i : i + n] == phrase] if n else []


def _contains(text: list[str], phrase: list[str]) -> bool:
    return bool(_starts(text, phrase))
