"""The background phrases (quizbank/search/background.txt): what the bank is not about turns a
query away however many of its words the bank uses, and no phrase is a query search is measured
on (bench/search_quality.py), so the figures stay honest."""

import re

import pytest

from quizbank.search import encoder, semantic

from .factories import QuestionFactory, TopicFactory
from .test_search_quality import _quality


def _words(text):
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def test_no_background_phrase_is_a_query_search_is_measured_on():
    quality = _quality()
    phrases = {_words(line) for line in semantic._background_lines()}
    assert len(phrases) >= 1000
    sets = {"main": (quality.QUERIES, quality.OFF_TOPIC)}
    sets |= {name: quality.query_set(name) for name in quality.QUERY_SETS}
    for name, (labelled, off_topic) in sets.items():
        texts = [text for text, _ in labelled] + list(off_topic)
        # A count, never the queries: the unread sets' texts are not printed.
        assert sum(_words(text) in phrases for text in texts) == 0, name


def test_no_background_phrase_is_near_a_query_search_is_measured_on():
    # The rule the list was cut by: no line within cosine 0.9 of a measured query, so a set
    # written later (held-out-v6 met seven such lines, held-out-v7 eight, held-out-v8 two) is not
    # answered by its own near-copies.
    model = encoder.encoder()
    if model is None:
        pytest.skip(encoder.status().detail)
    quality = _quality()
    phrases = model.encode(semantic._background_lines())
    sets = {"main": (quality.QUERIES, quality.OFF_TOPIC)}
    sets |= {name: quality.query_set(name) for name in quality.QUERY_SETS}
    for name, (labelled, off_topic) in sets.items():
        queries = model.encode([text for text, _ in labelled] + list(off_topic))
        # A count, never the queries.
        assert int(((phrases @ queries.T) >= 0.9).sum()) == 0, name


@pytest.mark.django_db
def test_a_query_nearest_a_background_phrase_finds_nothing_though_the_bank_uses_its_words(
    api, tmp_path, monkeypatch, settings
):
    topic = TopicFactory(slug="training")
    for slug, title, asked in (
        ("torch-basics", "What is a torch tensor?", ["make an array on the gpu with torch"]),
        ("clipping", "Gradient clipping", ["my gradients explode and the loss jumps"]),
    ):
        QuestionFactory(slug=slug, title=title, asked_as=asked, primary_topic=topic)
    query = "which torch should I take for camping in the woods"

    def search():
        semantic._BACKGROUND.clear()
        response = api.get("/api/questions/", {"search": query})
        assert response.status_code == 200
        return [row["slug"] for row in response.json()["results"]]

    background = tmp_path / "background.txt"
    background.write_text("# none near it\nhow to knit a scarf\n")
    monkeypatch.setattr(semantic, "BACKGROUND", background)
    settings.SEARCH_RESULTS_CACHE = 0  # the same search, ranked again after each list's change
    assert search()[:1] == ["torch-basics"]
    background.write_text("how to knit a scarf\na flashlight or a torch for a camping trip\n")
    assert search() == []
    semantic._BACKGROUND.clear()


def test_a_strong_match_is_answered_unless_a_background_phrase_is_nearer(monkeypatch):
    # "which torch for camping" is 0.455 from a question about torch, over SEMANTIC_STRONG, and
    # 0.665 from a camping phrase: the background decides, not the strong match alone.
    import numpy as np

    query = np.zeros(encoder.DIMENSIONS, dtype=np.float32)
    query[0] = 1.0
    question = np.zeros((1, encoder.DIMENSIONS), dtype=np.float32)
    question[0, 0], question[0, 1] = 0.5, np.sqrt(0.75)
    found = semantic.Vectors([1], question)
    scores = question @ query
    similar = semantic.Similar(scores, found, scores.copy(), query)
    assert similar.best >= semantic.SEMANTIC_STRONG
    near = np.zeros((1, encoder.DIMENSIONS), dtype=np.float32)
    near[0, 0], near[0, 2] = 0.7, np.sqrt(0.51)
    far = np.zeros((1, encoder.DIMENSIONS), dtype=np.float32)
    far[0, 3] = 1.0
    # No word of the query is one the bank holds: only the strong match could answer it.
    for phrases, expected in ((far, True), (near, False)):
        monkeypatch.setattr(semantic, "background", lambda phrases=phrases: phrases)
        assert semantic.answerable(similar, [], [], []) is expected
