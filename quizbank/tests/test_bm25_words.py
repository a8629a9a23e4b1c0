"""BM25's words are stored with each question when it is saved (issue 30), so a process builds
the index from them instead of splitting every question's text into words."""

import pytest

from quizbank.models import Question
from quizbank.search import bm25

from .factories import QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_index():
    """Each test starts as a new process does: nothing read yet."""
    bm25._DOCUMENTS.clear()
    bm25._READ.clear()
    yield
    bm25._DOCUMENTS.clear()
    bm25._READ.clear()


def _question(**fields):
    return QuestionFactory(primary_topic=TopicFactory(), **fields)


def test_a_save_stores_the_questions_words_by_the_current_recipe():
    question = _question(
        slug="clip-grads", title="Clipping gradients", prompt="Clip the gradient norm.", answer="x"
    )
    stored = Question.objects.get(pk=question.pk).bm25_words
    assert stored["recipe"] == bm25.RECIPE
    counts = stored["counts"]
    assert counts == dict(
        bm25.document_words(
            question.title, question.concepts, question.slug, "Clip the gradient norm.", "x"
        )
    )
    # A title word counts three times, a prompt word once.
    assert counts[bm25.words_of("gradients")[0]] == 3 + 1


def test_a_changed_text_stores_new_words():
    question = _question(slug="a", title="Dropout layers", prompt="p", answer="a")
    question.title = "Warmup schedules"
    question.save(update_fields=["title", "updated_at"])
    counts = Question.objects.get(pk=question.pk).bm25_words["counts"]
    assert bm25.words_of("warmup")[0] in counts
    assert bm25.words_of("dropout")[0] not in counts


def test_the_index_is_built_from_the_stored_words(monkeypatch):
    question = _question(slug="q", title="Gradient clipping", prompt="p", answer="a")
    # Stored words stand for the text: a word only they hold is found, so the text was not read.
    Question.objects.filter(pk=question.pk).update(
        bm25_words={"recipe": bm25.RECIPE, "counts": {"zebra": 1.0}}
    )
    monkeypatch.setattr(bm25, "document_words", lambda *a: pytest.fail("text read again"))
    from quizbank.search.terms import search_terms

    assert bm25.ranked(Question.objects.all(), search_terms("zebra"), 5) == [question.pk]


def test_words_of_another_recipe_or_none_are_read_from_the_text_and_stored():
    stale = _question(slug="s", title="Gradient clipping", prompt="p", answer="a")
    missing = _question(slug="m", title="Gradient clipping twice", prompt="p", answer="a")
    Question.objects.filter(pk=stale.pk).update(
        bm25_words={"recipe": "bm25/0", "counts": {"zebra": 1.0}}
    )
    Question.objects.filter(pk=missing.pk).update(bm25_words=None)
    from quizbank.search.terms import search_terms

    found = bm25.ranked(Question.objects.all(), search_terms("clipping"), 5)
    assert set(found) == {stale.pk, missing.pk}
    assert bm25.ranked(Question.objects.all(), search_terms("zebra"), 5) == []
    for question in (stale, missing):
        stored = Question.objects.get(pk=question.pk).bm25_words
        assert stored["recipe"] == bm25.RECIPE
        assert bm25.words_of("clipping")[0] in stored["counts"]


def test_how_a_learner_asks_it_is_read_and_a_change_of_it_stores_new_words():
    from quizbank.search.terms import search_terms

    question = _question(
        slug="nan-loss", title="Stable masked loss", prompt="p", answer="a", asked_as=[]
    )
    other = _question(slug="other", title="Exploding activations", prompt="p", answer="a")
    query = search_terms("my training blows up midway")
    assert bm25.ranked(Question.objects.all(), query, 5) == []
    question.asked_as = ["training blows up midway with nan"]
    question.save()
    bm25._READ.clear()
    assert bm25.ranked(Question.objects.all(), query, 5) == [question.pk]
    assert other.pk not in bm25.ranked(Question.objects.all(), search_terms("blows"), 5)
