"""Search keeps finding the question a learner means on the real bank (bench/search_quality.py),
and finds nothing for what the bank is not about, on the main set and on the sets written apart
from it. Thresholds sit a little under what it reaches (README, "Search")."""

import importlib.util
import sys
from pathlib import Path

import pytest
from django.db import connection

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


@pytest.fixture
def bank_slugs():
    bank_load(paths=[ROOT / "fixtures" / "bank"])
    return set(Question.objects.values_list("slug", flat=True))


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
        # Written before the relevance floor of issue 15 changed; never tuned to. Three of its
        # off-topic queries still find questions, every word of them one the bank uses: "memory
        # loss in old age", "learning rate of a student" and, since bank v3 (26 questions more),
        # a third. Since the symptom passages' ranking (semantic.py) its top-1 is 92.9% (was
        # 97.6%): two keyword queries ("BN in eval mode", "custom datset class") rank their
        # question second, after one whose mistakes name the same thing.
        ("held-out", 0.98, 0.92, 0.95, 3),
        # Written later by someone who had not read the search code; tuning looked at it. One
        # off-topic query finds questions: "how to pay attention in long meetings" (since bank
        # v3's rope-scaling-long-context).
        ("dev", 0.99, 0.92, 0.95, 1),
        # Written with dev and never looked at while tuning: the honest figures.
        ("sealed", 0.97, 0.88, 0.92, 0),
        # Issue 30's dev set (paraphrases, symptoms, slips, pasted questions, everyday off-topic
        # phrases), written before the fusion was tuned on it.
        ("dev-v3", 0.96, 0.78, 0.85, 0),
        # Issue 30's second dev set (more symptoms, paraphrases of questions dev-v3 leaves out,
        # everyday phrases sharing a bank word), written before the off-topic score was fitted on
        # it. Fused: 96.6% top-5 (94.8% before the symptom passages' ranking); three everyday
        # phrases find questions ("model trains for the living room", "how to pay attention in
        # class", "the expert witness fee in court").
        ("dev-v4", 0.95, 0.76, 0.85, 3),
        # Issue 30's: the same styles, by a reviewer who read neither the code nor the other
        # sets; never tuned on. Fused: 92.5% top-5 (89.4% before the symptom passages' ranking;
        # full text alone 70.6%), 2 of 40 off-topic queries find questions.
        ("held-out-v3", 0.90, 0.72, 0.79, 2),
        # A second reviewer's set of the same styles with harder everyday off-topic phrases,
        # never tuned on: fused 93.3% top-5 (88.7% top-1, MRR 0.907), 5 of 40 off-topic queries
        # find questions.
        ("held-out-v4", 0.92, 0.86, 0.88, 5),
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
