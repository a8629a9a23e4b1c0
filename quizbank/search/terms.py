"""A query read as *terms*: what the learner asked about, each with the phrases that say it.

- a PyTorch name (`zero_grad`, `model.eval()`, `nn.Module`) is one term, searched as a phrase of
  its parts (the index splits names the same way, migration 0005), and weighs double;
- a phrase from fixtures/bank/synonyms.yaml ("out of memory", "multi gpu") is one term that matches
  any phrase of its group ("OOM", "DataParallel", "DDP"), and weighs double as a name does;
- any other word is a term, unless it is a stop word or interview filler (explain, difference,
  why, implement, example, ...), which say how a question is asked, not what it is about.

The thresholds below are the same on every database; postgres.py and fallback.py score against them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.conf import settings

MAX_LENGTH = 300
MAX_TERMS = 12
NAME_WEIGHT = 2.0
# A question must hold more than this share of the query's terms (by weight), a little less of a
# long pasted question's...
MIN_COVERAGE = 0.5
MIN_COVERAGE_LONG = 0.4
LONG_QUERY_TERMS = 4
# A word the bank never uses, in any form ("pizza", "guitar", "toddlers"), says what the query is
# about as plainly as a PyTorch name does, so it weighs as much in the coverage: "fine tune a
# guitar" then needs more than "fine tune" to match, and finds nothing, while a pasted interview
# question's stray word is outweighed by its many PyTorch terms. A word the bank uses only in
# prompts and answers ("iteration") weighs as any word. The vocabulary is that of titles, concepts
# and slugs (words of 4 letters or more, read by their English stem), then the search vectors.
FOREIGN_WEIGHT = NAME_WEIGHT
# ...and score at least this share of the best match.
MIN_SHARE_OF_BEST = 0.45
# ...and hold enough of them in its title, concepts or slug (a term only in the prompt counts 0.4).
MIN_SCORE = 0.3
# Two terms typed side by side and found within a word of each other in a question add this share
# of the lighter one's weight to its rank: phrase and proximity matter.
PROXIMITY_WEIGHT = 0.5
SYNONYMS_PATH = Path(settings.BASE_DIR) / "fixtures" / "bank" / "synonyms.yaml"

NAME_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+(?:\(\))?|[a-z0-9]+(?:_[a-z0-9]+)+")
WORD_RE = re.compile(r"[a-z0-9]+")
NAME_PREFIXES = ("torch.nn.functional.", "torch.nn.", "torch.", "nn.functional.", "nn.", "f.")

FUNCTION_WORDS = frozenset(
    "a an and are as at be been being but by can could did do does doing for from had has have"  # noqa: SIM905 - reads as words
    " how i if in into is it its me my myself no not of on once only or our out over should so"
    " some such than that the their them then there these they this those through to too under"
    " until up very was we were what when where which while who whom why will with would you your"
    " yours about anything something every each any all other more most much many still always"
    " ever whilst amongst"
    # what is left of a contraction ("don't": "don" and "t")
    " don doesn didn isn aren wasn weren won wouldn shouldn couldn haven hasn hadn ve ll re".split()
)
# How interview questions are asked rather than what they are about. Searched only when a query
# holds nothing else ("what is pytorch").
FILLER = frozenset(
    "vs versus between difference differences different compare comparison explain describe"  # noqa: SIM905 - reads as words
    " discuss tell give show example examples important importance implement implementing"
    " implementation write writing code use using used way ways work works working mean means"
    " meaning purpose role concept understand understanding need needed happen happens typically"
    " usually commonly common best good better simple main key really exactly actually also just"
    " get getting make makes one two pytorch torch question interview walk please help want know"
    " thing things python pythonic create compute calculate deal handle problem problems"
    " advantages advantage benefits turn turned off time times default".split()
)
STOP_WORDS = FUNCTION_WORDS | FILLER


@dataclass
class Term:
    """One thing the learner asked about, and the phrases that say it."""

    phrases: list[str]
    weight: float = 1.0
    fixable: bool = False  # a single word that may be misspelt
    plain: bool = False  # a single word, not a name or a phrase of synonyms.yaml
    # A word that no title, concept or slug of the bank uses in any form, nor misspells...
    foreign: bool = False
    # ...and that no prompt or answer uses either: it weighs as a name (FOREIGN_WEIGHT).
    unused: bool = False
    queries: list[str] = field(default_factory=list)  # tsquery texts, filled on PostgreSQL
    # Words found for the phrases, also marked in results: a slip's correction, a compound's parts.
    marks: list[str] = field(default_factory=list)


@functools.cache
def synonym_groups() -> dict[str, tuple[str, ...]]:
    """Each phrase of fixtures/bank/synonyms.yaml, as `synonym_key` reads it, mapped to its
    whole group."""
    groups: dict[str, tuple[str, ...]] = {}
    if not SYNONYMS_PATH.exists():
        return groups
    for group in yaml.safe_load(SYNONYMS_PATH.read_text(encoding="utf-8")) or []:
        phrases = tuple(dict.fromkeys(_normalise(str(p)) for p in group))
        for key in dict.fromkeys(synonym_key(p) for p in phrases):
            groups[key] = tuple(dict.fromkeys(groups.get(key, ()) + phrases))
    return groups


def synonym_key(phrase: str) -> str:
    """A phrase with each word in the singular and in American spelling, so that "second
    derivatives" or "normalisation" find the group that lists "second derivative" or
    "normalization"."""
    return " ".join(american(singular(word)) for word in phrase.split())


def singular(word: str) -> str:
    if len(word) <= 3 or word.endswith(("ss", "is", "as")) or len(word) > 4 and word.endswith("us"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


# British endings and their American spellings, which the bank uses (normalise, behaviour,
# analyse).
BRITISH = re.compile(
    r"^(\w{3,})(?:is(e|es|ed|ing|ation|ations|er|ers)|our(s|ed|ing)?|ys(e|es|ed|ing))$"
)


def american(word: str) -> str:
    match = BRITISH.match(word)
    if not match:
        return word
    stem, ise, our, yse = match.groups()
    if ise is not None:
        return f"{stem}iz{ise}"
    if yse is not None:
        return f"{stem}yz{yse}"
    return f"{stem}or{our or ''}"


def _normalise(text: str) -> str:
    return " ".join(WORD_RE.findall(text.lower()))


def _name_phrases(name: str) -> list[str]:
    name = name.removesuffix("()")
    for prefix in NAME_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
            break
    phrases = [_normalise(name)]
    if "." in name:  # model.eval(): also the method alone ("eval"), as a learner may write it
        last = _normalise(name.rsplit(".", 1)[1])
        if len(last) >= 4 and last not in STOP_WORDS:
            phrases.append(last)
    return [p for p in dict.fromkeys(phrases) if p]


def search_terms(text: str) -> list[Term]:
    """What the learner asked about, in the order they typed it."""
    text = text.lower()[:MAX_LENGTH]
    terms: list[Term] = []
    for match in NAME_RE.finditer(text):
        phrases = _name_phrases(match.group())
        synonyms = synonym_groups().get(synonym_key(phrases[0])) if phrases else None
        if synonyms:
            terms.append(Term(list(synonyms), weight=NAME_WEIGHT))
        elif phrases:
            terms.append(Term(phrases, weight=NAME_WEIGHT))
    words = WORD_RE.findall(NAME_RE.sub(" ", text))
    # A query of filler only ("what is pytorch") is searched for its filler.
    words_left = set(words) if not terms and all(w in STOP_WORDS for w in words) else set[str]()
    groups = synonym_groups()
    longest = max((len(p.split()) for p in groups), default=1)
    keyed = [american(singular(word)) for word in words]  # synonym_key, a word at a time
    i = 0
    while i < len(words):
        for size in range(min(longest, len(words) - i), 0, -1):
            phrase = " ".join(keyed[i : i + size])
            if phrase in groups:
                terms.append(Term(list(groups[phrase]), weight=NAME_WEIGHT))
                i += size
                break
        else:
            word = words[i]
            i += 1
            if (word not in STOP_WORDS or word in FILLER and word in words_left) and (
                len(word) > 1 or word.isdigit()
            ):
                # A word of four letters or fewer is read as typed: one edit away from it lies
                # another everyday word more often than a slip ("lose" / "loss").
                spellings = list(dict.fromkeys([word, american(word)]))
                terms.append(
                    Term(spellings, fixable=len(word) >= 5 and not word.isdigit(), plain=True)
                )
    unique: dict[tuple[str, ...], Term] = {}
    for term in terms:
        unique.setdefault(tuple(term.phrases), term)
    return list(unique.values())[:MAX_TERMS]


def is_typo(typed: str, word: str) -> bool:
    """Whether `typed` reads as a misspelling of `word`: same first letter, and one edit away
    (two for a word of nine letters or more), a swap of neighbours counting as one."""
    if typed[:1] != word[:1]:
        return False
    # Two edits from a word of eight letters or fewer is as often a different word ("cookies" /
    # "copies") as a slip.
    limit = 1 if len(typed) <= 8 else 2
    if abs(len(typed) - len(word)) > limit:
        return False
    previous, row = None, list(range(len(word) + 1))
    for i, a in enumerate(typed, 1):
        current = [i]
        for j, b in enumerate(word, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a != b))
            if previous and i > 1 and j > 1 and a == word[j - 2] and typed[i - 2] == b:
                cost = min(cost, previous[j - 2] + 1)
            current.append(cost)
        previous, row = row, current
    return row[-1] <= limit


SUFFIXES = (
    "izations",
    "isations",
    "ization",
    "isation",
    "ations",
    "ation",
    "ings",
    "ing",
    "es",
    "e",
)


def stem(phrase: str) -> str:
    """A crude stem for substring matching and highlighting: "initialization" -> "initializ"."""
    for suffix in SUFFIXES:
        if phrase.endswith(suffix) and len(phrase) - len(suffix) >= 4:
            return phrase[: -len(suffix)]
    return phrase


def marked_words(terms: list[Term]) -> str:
    """The words a result marks (highlight.py), space-separated."""
    words = (w for t in terms for p in [*t.phrases, *t.marks] for w in p.split())
    return " ".join(dict.fromkeys(words))


def min_coverage(terms: list[Term]) -> float:
    """The weight of terms a question must hold more than."""
    share = MIN_COVERAGE_LONG if len(terms) >= LONG_QUERY_TERMS else MIN_COVERAGE
    return share * sum(t.weight for t in terms) - 1e-9 * (len(terms) >= LONG_QUERY_TERMS)


def weigh_foreign(terms: list[Term]) -> None:
    """Give each word the bank does not use at all the weight of a name (FOREIGN_WEIGHT)."""
    for term in terms:
        if term.unused:
            term.weight = max(term.weight, FOREIGN_WEIGHT)
