"""Search keeps finding the question a learner means on the real bank (bench/search_quality.py),
and finds nothing for what the bank is not about, on the main set and on the sets written apart
from it. Thresholds sit a little under what it reaches (README, "Search")."""

import importlib.util
import sys
from pathlib import Path

import pytest
from django.db import connection, transaction

from quizbank.bank.sync import bank_load
from quizbank.models import Question

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the targets are PostgreSQL's"),
]


def _quality():
    spec = importlib.util.spec_from_file_location(
        "search_quality", ROOT / "bench/search_quality.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def _shipped_bank(django_db_setup, django_db_blocker):
    # Loaded once for the module (each load takes seconds, and a dozen tests read the same bank),
    # in a transaction rolled back at the module's end; each test runs in a savepoint of it
    # (pytest-django's own), so what a test changes is undone after it.
    with django_db_blocker.unblock(), transaction.atomic():
        bank_load(paths=[ROOT / "fixtures" / "bank"])
        yield set(Question.objects.values_list("slug", flat=True))
        transaction.set_rollback(True)


@pytest.fixture
def bank_slugs(_shipped_bank, db):
    return _shipped_bank


def test_search_finds_the_learners_question_in_the_real_bank(bank_slugs):
    report = _quality().evaluate(bank_slugs)
    assert report.queries >= 200
    assert report.top5 >= 0.99, report.misses
    # Fused with BM25 and meaning (issue 30) the main set's top-1 is 93.2% (full text alone
    # 94.0%): the other rankings reorder a few of full text's close first places.
    assert report.top1 >= 0.92, report.misses
    assert report.mrr >= 0.95, report.misses
    assert report.false_positive_rate == 0, report.misses


@pytest.mark.parametrize(
    ("name", "top5", "top1", "mrr", "off_topic_found"),
    [
        # Written before the relevance floor of issue 15 changed; never tuned to. Two of its
        # off-topic queries find questions, every word of them one the bank uses. Since the
        # symptom passages' ranking (semantic.py) two keyword queries ("BN in eval mode", "custom
        # datset class") rank their question second, after one whose mistakes name the same thing.
        ("held-out", 0.98, 0.90, 0.94, 2),
        # Written later by someone who had not read the search code; tuning looked at it.
        ("dev", 0.99, 0.94, 0.96, 0),
        # Written with dev and never looked at while tuning: the honest figures.
        ("sealed", 0.98, 0.91, 0.94, 0),
        # Issue 30's dev set (paraphrases, symptoms, slips, pasted questions, everyday off-topic
        # phrases), written before the fusion was tuned on it.
        ("dev-v3", 0.96, 0.80, 0.87, 0),
        # Issue 30's second dev set (more symptoms, paraphrases of questions dev-v3 leaves out,
        # everyday phrases sharing a bank word), written before the off-topic score was fitted on
        # it. Fused: 98.3% top-5; two everyday phrases find questions.
        ("dev-v4", 0.96, 0.87, 0.91, 2),
        # Issue 30's third dev set, by a reviewer who read neither the code, the other sets nor
        # asked_as, with 60 everyday and ML-adjacent off-topic phrases; the gate is fitted on it.
        # Fused: 99.1% top-5, 2 of 60 off-topic queries find questions (5 before a strong match
        # had to beat the background).
        ("dev-v5", 0.97, 0.90, 0.93, 6),
        # Issue 30's held-out sets: the same styles, each by a reviewer who read neither the code
        # nor the other sets; never tuned on, their misses never printed. v3, fused: 93.8% top-5
        # (92.5% before asked_as and the background; full text alone 70.6%), no off-topic query
        # finds anything (2 before).
        ("held-out-v3", 0.92, 0.79, 0.85, 1),
        # v4, harder everyday off-topic phrases: 96.7% top-5 (93.3% before), 1 of 40 off-topic
        # queries finds questions (5 before).
        ("held-out-v4", 0.94, 0.91, 0.93, 2),
        # v5, written with dev-v5 on the other half of the bank: 99.1% top-5, 3 of 40 off-topic
        # queries find questions (8 before asked_as and the background).
        ("held-out-v5", 0.96, 0.93, 0.94, 4),
        # v6, written after the last tuning, 60 off-topic phrases sharing the bank's words in
        # other senses: 99.3% top-5, 96.0% top-1, 2 of 60 off-topic queries find questions.
        ("held-out-v6", 0.97, 0.93, 0.95, 3),
        # v7, by another reviewer a stop later, before that stop changed anything: 100% top-5
        # (98.7% with the Python ranker), 94.0% top-1, 1 of 60 off-topic queries finds questions.
        ("held-out-v7", 0.97, 0.91, 0.94, 3),
        # v8, by a third such reviewer (stop 41), 40 off-topic phrases: 99.3% top-5 with either
        # ranker, 94.0% top-1 (93.3% with the Python ranker), 1 of 40 off-topic queries finds
        # questions.
        ("held-out-v8", 0.97, 0.91, 0.94, 2),
    ],
)
def test_search_generalises_to_phrasings_written_apart(
    bank_slugs, name, top5, top1, mrr, off_topic_found
):
    quality = _quality()
    queries, off_topic = quality.query_set(name)
    assert len(queries) >= 40 and len(off_topic) >= 20
    report = quality.evaluate(bank_slugs, queries, off_topic)
    assert report.top5 >= top5, report.misses
    assert report.top1 >= top1, report.misses
    assert report.mrr >= mrr, report.misses
    assert report.false_positive_rate <= off_topic_found / len(off_topic), report.misses


def test_the_python_ranker_make_run_uses_finds_the_learners_question_too(bank_slugs, settings):
    settings.SEARCH_RANKER = "python"
    report = _quality().evaluate(bank_slugs)
    assert report.top5 >= 0.99, report.misses
    assert report.top1 >= 0.92, report.misses
    assert report.false_positive_rate == 0, report.misses


def test_every_line_of_how_a_learner_asks_a_question_finds_it(bank_slugs):
    # asked_as lines are search's own data, so this is no measure of how well it generalises:
    # it proves that the off-topic gate and the background never turn the bank's own phrasings
    # away, and that each question's lines rank it near the top.
    from quizbank.search import question_search_results

    slug_of = dict(Question.objects.values_list("pk", "slug"))
    lines = [
        (slug, line)
        for slug, asked in Question.objects.values_list("slug", "asked_as")
        for line in asked
    ]
    assert len(lines) >= 1000
    found = []
    for slug, line in lines:
        results = question_search_results(Question.objects.all(), line)
        found.append((slug, line, [slug_of[pk] for pk in (results.ids if results else [])]))
    assert all(ids for _, _, ids in found), [line for _, line, ids in found if not ids]
    top5 = sum(slug in ids[:5] for slug, _, ids in found) / len(found)
    assert top5 >= 0.99, top5


def test_passages_scored_in_two_steps_rank_as_scoring_every_one_does(bank_slugs, monkeypatch):
    # A bank of over semantic.EXACT_PASSAGES passages scores them on their principal components
    # first and only a shortlist of questions exactly. The real bank is forced into that here with
    # a shortlist of 60 of its questions (about a third; at 10,000 questions it is 256): the
    # fused first five must stay those of scoring every passage (627 of 628 dev queries when
    # measured), and an off-topic query must stay off topic.
    from quizbank.search import question_search_results, semantic

    quality = _quality()
    queries = [
        text
        for name in ("dev", "dev-v3", "dev-v4", "dev-v5")
        for labelled, off_topic in [quality.query_set(name)]
        for text in [*(query for query, _ in labelled), *off_topic]
    ]
    questions = Question.objects.all()

    def first_five():
        return [question_search_results(questions, text).ids[:5] for text in queries]

    every = first_five()
    monkeypatch.setattr(semantic, "EXACT_PASSAGES", 0)
    monkeypatch.setattr(semantic, "SHORTLIST", 60)
    monkeypatch.setattr(semantic, "_READ", {})
    assert semantic.vectors(questions).basis is not None
    two_steps = first_five()
    assert [bool(ids) for ids in two_steps] == [bool(ids) for ids in every]
    same = sum(a == b for a, b in zip(every, two_steps, strict=True))
    assert same >= 0.99 * len(queries), (same, len(queries))
