"""A question's best symptom passage, scored exactly for a small bank and in two steps for a large
one (semantic.Vectors.passage_scores): the two steps score the questions they keep exactly, and
keep the nearest ones."""

import numpy as np
import pytest

from quizbank.search import runtime, semantic
from quizbank.search.encoder import DIMENSIONS


def _bank(questions: int, seed: int = 0) -> tuple[semantic.Vectors, np.ndarray]:
    """Questions around 40 topics (a unit direction each), each with 3 to 12 passages near its
    topic, as unit rows; and a query near topic 0."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((40, DIMENSIONS))
    counts = rng.integers(3, 13, questions)
    owners = np.repeat(np.arange(questions), counts)
    topic = rng.integers(0, 40, questions)[owners]
    passages = topics[topic] + rng.standard_normal((len(owners), DIMENSIONS)) * 0.8
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    matrix = rng.standard_normal((questions, DIMENSIONS))
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = topics[0] + rng.standard_normal(DIMENSIONS) * 0.8
    found = semantic.Vectors(
        list(range(1, questions + 1)),
        matrix.astype(np.float32),
        passages.astype(np.float32),
        owners.astype(np.int64),
    )
    return found, (query / np.linalg.norm(query)).astype(np.float32)


def test_a_small_bank_scores_every_passage():
    found, query = _bank(300)
    assert found.basis is None
    scores = found.passage_scores(query)
    assert scores is not None
    expected = [
        max(float(found.symptoms[row] @ query) for row in np.flatnonzero(found.owners == n))
        for n in range(300)
    ]
    assert scores == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("onnxruntime", [True, False], ids=["int8 in onnxruntime", "numpy"])
def test_a_large_bank_scores_a_shortlist_exactly_and_keeps_the_nearest(monkeypatch, onnxruntime):
    monkeypatch.setattr(semantic, "EXACT_PASSAGES", 1000)
    monkeypatch.setattr(semantic, "SHORTLIST", 100)
    if not onnxruntime:
        monkeypatch.setattr(runtime, "graph", lambda: None)
    found, query = _bank(2000)
    assert found.basis is not None
    if onnxruntime:
        assert found.coarse_product is not None and found.coarse is None
    else:
        assert found.coarse_product is None
        assert found.coarse is not None and found.coarse.shape[1] == semantic.COARSE_DIMENSIONS
    exact = found.passage_scores(query, exact=True)
    two_steps = found.passage_scores(query)
    assert exact is not None and two_steps is not None
    kept = two_steps > -1
    assert kept.sum() == 100
    # What the shortlist holds is scored exactly, on all of its question's passages.
    assert two_steps[kept] == pytest.approx(exact[kept], abs=1e-5)
    nearest = set(np.argsort(-exact)[:20])
    assert int(np.argmax(two_steps)) == int(np.argmax(exact))
    assert len(nearest & set(np.flatnonzero(kept))) >= 19


def test_questions_without_passages_score_none():
    found, query = _bank(50)
    owners = found.owners
    assert owners is not None and found.symptoms is not None
    # Questions 0 to 9 lose their passages.
    keep = owners >= 10
    found = semantic.Vectors(found.pks, found.matrix, found.symptoms[keep], owners[keep])
    scores = found.passage_scores(query)
    assert scores is not None
    assert (scores[:10] == -1).all() and (scores[10:] > -1).all()
    empty = semantic.Vectors(found.pks, found.matrix, found.symptoms[:0], owners[:0])
    assert empty.passage_scores(query) is None


def test_the_int8_product_is_within_a_percent_of_float32s():
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((5000, 96)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix[:, 0] *= 4  # one large direction, as a principal component is
    matrix[17] = 0  # a row of zeros has no scale of its own
    vector = rng.standard_normal(96).astype(np.float32)
    vector /= np.linalg.norm(vector)
    product = runtime.int8_product(matrix)
    assert product is not None
    approx, exact = product(vector), matrix @ vector
    assert approx.shape == exact.shape and approx.dtype == np.float32
    # Each within 1% of the largest a row and the vector could give (the product of their largest
    # values summed over the columns, as the rounding errors would be at worst).
    bound = np.abs(matrix).max(axis=1) * np.abs(vector).max() * 96 * 0.01
    assert (np.abs(approx - exact) <= bound + 1e-6).all()
    assert approx[17] == 0
    # On average far better than that bound: the order of what the shortlist is cut from.
    assert np.corrcoef(approx, exact)[0, 1] > 0.999
