"""Search understands meaning: a learner's own words and symptoms find the question, with either
ranker; exact names stay on top; the encoder's files are checked, and without them search still
works on full text and says so (quizbank/search/semantic.py, encoder.py)."""

import shutil
import sys
import uuid

import numpy as np
import pytest
from django.core import checks

from quizbank.models import Question
from quizbank.search import encoder, semantic
from quizbank.search.fallback import words_of

from .factories import ExerciseFactory, HintFactory, QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db

QUESTIONS = [
    (
        "debug-nan-loss",
        "Why does the training loss become NaN, and how do you find the cause?",
        "After some steps the loss prints nan. Walk through how you would debug it.",
        ["numerical stability", "gradient explosion", "torch.autograd.detect_anomaly"],
        "Look for an overflow: a large learning rate, a log of zero, or fp16 without scaling.",
    ),
    (
        "freeze-layers",
        "Freezing layers of a pretrained network when fine-tuning",
        "How do you keep the backbone's weights fixed and train only a new head?",
        ["requires_grad", "transfer learning", "param groups"],
        "Set requires_grad=False on the backbone's parameters and give the optimizer the rest.",
    ),
    (
        "zero-grad",
        "Why must gradients be reset between optimizer steps?",
        "A training loop never calls optimizer.zero_grad(). What happens and why?",
        ["gradient accumulation", "Optimizer.zero_grad"],
        "backward() adds into .grad instead of overwriting it, so stale gradients pile up.",
    ),
    (
        "dataloader-workers",
        "Speeding up data loading with worker processes",
        "The GPU waits on input batches. How do DataLoader workers and pinned memory help?",
        ["DataLoader num_workers", "pin_memory", "prefetching"],
        "Workers prepare batches in parallel processes; pinned memory speeds the copy to the GPU.",
    ),
]


@pytest.fixture(autouse=True, params=["auto", "python"])
def ranker(request, settings):
    """Every test runs with the database's ranker and with the Python one (SQLite's)."""
    settings.SEARCH_RANKER = request.param
    return request.param


@pytest.fixture
def bank():
    topic = TopicFactory(slug="training")
    for slug, title, prompt, concepts, answer in QUESTIONS:
        QuestionFactory(
            slug=slug,
            title=title,
            prompt=prompt,
            concepts=concepts,
            answer=answer,
            primary_topic=topic,
        )


@pytest.fixture
def no_encoder(tmp_path, monkeypatch):
    """The encoder's directory pointed at `tmp_path` (empty unless a test copies files there)."""
    monkeypatch.setenv(encoder.PATH_ENV, str(tmp_path))
    encoder.reset()
    yield tmp_path
    monkeypatch.delenv(encoder.PATH_ENV)
    encoder.reset()


def top(api, text):
    response = api.get("/api/questions/", {"search": text})
    assert response.status_code == 200
    return [row["slug"] for row in response.json()["results"]]


def test_the_encoder_puts_a_paraphrase_nearer_than_an_unrelated_sentence():
    model = encoder.encoder()
    assert model is not None, encoder.status().detail
    a, b, c = model.encode(
        [
            "my loss goes to nan after a few hundred steps",
            "Why does the training loss become NaN?",
            "How long should I boil an egg?",
        ]
    )
    assert np.allclose([np.linalg.norm(v) for v in (a, b, c)], 1.0, atol=1e-5)
    assert a @ b > 0.5 > 0.2 > a @ c
    # A batch of texts of different lengths encodes each as it would alone (padding is ignored).
    assert np.allclose(model.encode(["Why does the training loss become NaN?"])[0], b, atol=1e-5)


def test_onnxruntime_runs_the_layers_to_numpys_vectors():
    # The same weights through the graph built for onnxruntime and through numpy's products:
    # texts of different lengths in one batch, so the padding mask is exercised too.
    texts = [
        "my loss goes to nan after a few hundred steps",
        "x",
        "What is the difference between model.train() and model.eval(), and why does dropout"
        " behave differently in each?",
    ]
    fast = encoder.Encoder(_installed_dir())
    assert fast.runtime == "onnxruntime"
    plain = encoder.Encoder(_installed_dir(), runtime="numpy")
    assert plain.runtime == "numpy"
    assert np.abs(fast.encode(texts) - plain.encode(texts)).max() < 1e-5


def test_without_onnxruntime_numpy_runs_the_layers(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # importing it raises ImportError
    encoder.reset()
    try:
        model = encoder.encoder()
        assert model is not None and model.runtime == "numpy"
        assert encoder.status().detail.endswith("layers run by numpy")
        a, b = model.encode(["why is my loss nan", "How long should I boil an egg?"])
        assert a @ a == pytest.approx(1.0, abs=1e-5)
        assert a @ b < 0.3
    finally:
        encoder.reset()


def test_an_onnxruntime_session_that_fails_to_start_leaves_numpy_running_the_layers(monkeypatch):
    from quizbank.search import runtime

    def fails(*args, **kwargs):
        raise RuntimeError("onnxruntime: this CPU lacks an instruction it needs")

    monkeypatch.setattr(runtime, "session", fails)
    model = encoder.Encoder(_installed_dir())
    assert model.runtime == "numpy"
    plain = encoder.Encoder(_installed_dir(), runtime="numpy")
    text = ["gradient clipping by norm"]
    assert np.abs(model.encode(text) - plain.encode(text)).max() == 0
    rows = np.eye(4, dtype=np.float32)
    assert runtime.int8_product(rows) is None


def test_a_save_never_encodes_and_the_first_search_stores_the_embedding(api, bank):
    # A text this process never encoded (a bank load keeps what it encoded, for the saves).
    question = QuestionFactory(slug="clip", title=f"Clipping gradients ({uuid.uuid4().hex})")
    assert question.embedding is None and question.embedding_key == ""
    top(api, "clipping gradients")
    question.refresh_from_db()
    assert len(question.embedding) == encoder.DIMENSIONS * 2  # float16
    stored = np.frombuffer(question.embedding, dtype="<f2").astype(np.float32)
    text = semantic.embedding_text(
        question.title, question.concepts, question.prompt, question.answer
    )
    assert question.embedding_key == semantic.embedding_key(text)
    assert np.allclose(stored, encoder.encoder().encode([text])[0], atol=2e-3)


def test_an_embedding_is_kept_while_the_text_it_was_computed_from_is_unchanged(api, bank):
    top(api, "gradients")
    question = Question.objects.get(slug="zero-grad")
    key, embedding = question.embedding_key, bytes(question.embedding)
    question.why_asked = "It shows whether you know how backward accumulates."
    question.save()
    question.refresh_from_db()
    assert (question.embedding_key, bytes(question.embedding)) == (key, embedding)
    # A new text drops it (no encoding in the save); the next search encodes the new text.
    question.title = f"What happens if you never call zero_grad? ({uuid.uuid4().hex})"
    question.save(update_fields=["title"])
    question.refresh_from_db()
    assert question.embedding is None
    api.get("/api/questions/", {"search": "gradients"})
    question.refresh_from_db()
    text = semantic.embedding_text(
        question.title, question.concepts, question.prompt, question.answer
    )
    assert question.embedding_key == semantic.embedding_key(text) != key


def test_a_paraphrase_that_shares_no_word_with_the_bank_finds_its_question(api, bank, settings):
    text = "faster dataloading"
    bank_words = {
        w
        for q in Question.objects.all()
        for w in words_of(" ".join([q.title, q.prompt, " ".join(q.concepts), q.answer]))
    }
    assert not set(words_of(text)) & bank_words
    assert top(api, text)[:1] == ["dataloader-workers"]
    settings.SEARCH_SEMANTIC = "off"
    assert top(api, text) == []


@pytest.mark.parametrize(
    ("text", "expected", "words_alone"),
    [
        # Symptoms and paraphrases in a learner's words: full text alone finds nothing for the
        # first three (too few of their words are the bank's).
        ("how do I stop the pretrained part of my network from updating", "freeze-layers", []),
        ("feeding the gpu faster with parallel batch loading", "dataloader-workers", []),
        ("why are my gradients growing every iteration", "zero-grad", []),
        ("the loss value explodes to nan after a while", "debug-nan-loss", ["debug-nan-loss"]),
    ],
)
def test_a_learners_own_words_find_the_question(api, bank, settings, text, expected, words_alone):
    assert top(api, text)[:1] == [expected]
    settings.SEARCH_SEMANTIC = "off"
    assert top(api, text) == words_alone


def test_an_exact_name_stays_first(api, bank):
    assert top(api, "optimizer.zero_grad")[0] == "zero-grad"
    assert top(api, "requires_grad")[0] == "freeze-layers"


@pytest.mark.parametrize(
    "text",
    [
        "how do I bake sourdough bread",
        # Everyday phrases that share a word with the bank: meaning finds nothing near them.
        "learning to play guitar",
        "a batch of cookies",
    ],
)
def test_a_query_that_means_nothing_the_bank_is_about_finds_nothing(api, bank, text):
    assert top(api, text) == []


def test_the_list_page_answers_an_everyday_query_with_popular_questions(client, bank):
    body = client.get("/questions/", {"search": "a batch of cookies"}).content.decode()
    assert "0 questions" in body
    assert "Popular questions" in body


def test_an_altered_model_file_is_refused_and_search_runs_on_full_text(api, bank, no_encoder):
    shutil.copy(_installed_dir() / "tokenizer.json", no_encoder / "tokenizer.json")
    data = bytearray((_installed_dir() / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (no_encoder / "model.safetensors").write_bytes(bytes(data))
    assert encoder.encoder() is None
    assert "model.safetensors: SHA-256" in encoder.status().detail
    assert top(api, "optimizer.zero_grad")[0] == "zero-grad"
    health = api.get("/health/").json()
    assert health["search"]["ranking"] == "full text only"
    assert "model.safetensors" in health["search"]["encoder"]


def test_without_the_model_files_search_works_and_health_says_so(api, bank, no_encoder):
    assert top(api, "optimizer.zero_grad")[0] == "zero-grad"
    response = api.get("/health/")
    assert response.status_code == 200
    assert response.json() == {
        "database": "ok",
        "search": {
            "ranking": "full text only",
            "encoder": "search ranks on full text only: model.safetensors: No such file or"
            " directory",
        },
    }
    warnings = [m for m in checks.run_checks() if m.id == "quizbank.W001"]
    assert len(warnings) == 1 and "model.safetensors, tokenizer.json" in warnings[0].msg
    # A question saved meanwhile has no embedding; the next bank load (semantic.fill) adds it.
    question = QuestionFactory(slug="saved-without-encoder", title=f"Clipping ({uuid.uuid4().hex})")
    assert question.embedding is None


def test_health_says_search_ranks_by_meaning_when_the_encoder_loads(api):
    body = api.get("/health/").json()
    assert body["search"]["ranking"] == "full text and meaning"


def test_a_bank_load_fills_embeddings_that_were_missing(bank, no_encoder):
    question = QuestionFactory(slug="late", title=f"Clipping gradients ({uuid.uuid4().hex})")
    assert question.embedding is None
    shutil.copy(_installed_dir() / "tokenizer.json", no_encoder / "tokenizer.json")
    shutil.copy(_installed_dir() / "model.safetensors", no_encoder / "model.safetensors")
    encoder.reset()
    assert semantic.fill(Question.objects.all()) == 1
    question.refresh_from_db()
    assert len(question.embedding) == encoder.DIMENSIONS * 2


WRONG_SOLUTION = '''"""Misconception: Weights that start equal learn to differ on their own.

Correction: every unit of a layer started from the same constant gets the same gradient, so they
stay identical copies of each other however long the network trains.

Hint: What does each hidden unit compute at the first step?
"""
def init(layer):
    layer.weight.data.fill_(0.5)
'''


def test_a_question_s_symptom_passages_are_read_from_its_hints_mistakes_and_wrong_solutions():
    answer = (
        "Start from small random values.\n\n## Common mistakes\n\n- Filling every weight with"
        " `0.5`.\n- Reusing one seed\n  for every layer.\n\n## Follow-up questions\n\n- Why?"
    )
    texts = semantic.symptom_texts(
        "It shows whether you know symmetry.", answer, ["Look at one unit."], {"a": WRONG_SOLUTION}
    )
    assert texts == [
        "It shows whether you know symmetry.",
        "Look at one unit.",
        "Filling every weight with 0.5 .",
        "Reusing one seed for every layer.",
        "Weights that start equal learn to differ on their own. every unit of a layer started from"
        " the same constant gets the same gradient, so they stay identical copies of each other"
        " however long the network trains.",
    ]
    # How a learner asks it comes first, each line a passage of its own.
    asked = ["all my neurons learn the same thing", "`init` weights"]
    assert semantic.symptom_texts("Why.", "", [], None, asked) == [
        "all my neurons learn the same thing",
        "init weights",
        "Why.",
    ]


def test_a_symptom_only_a_wrong_solution_tells_lifts_its_question(api, bank, monkeypatch, settings):
    # Nothing of the title, concepts, prompt or answer of "init" says that every unit gets the same
    # gradient; its wrong solution's misconception and correction do.
    topic = TopicFactory(slug="init")
    init = QuestionFactory(
        slug="init",
        title="Initializing the weights of a layer",
        prompt="Write `init(layer)` for a linear layer.",
        concepts=["torch.nn.init", "nn.Linear.weight"],
        answer="Draw the weights from a small random distribution scaled by the fan-in.",
        primary_topic=topic,
    )
    ExerciseFactory(question=init, wrong_solutions={"constant": WRONG_SOLUTION})
    QuestionFactory(
        slug="hidden-size",
        title="Choosing the number of hidden units of a layer",
        prompt="How wide should a hidden layer be?",
        concepts=["nn.Linear", "model capacity"],
        answer="Wider layers fit more, at the cost of memory and overfitting.",
        primary_topic=topic,
    )
    text = "every neuron in the layer gets the same gradient"
    with_symptoms = top(api, text)
    similar = semantic.similarities(Question.objects.all(), text)
    assert similar is not None
    assert similar.nearest(1, symptoms=True)[0][0] == init.pk
    monkeypatch.setattr(semantic, "SYMPTOM_WEIGHT", 0.0)
    settings.SEARCH_RESULTS_CACHE = 0  # the same search, ranked again without the passages
    without = top(api, text)
    assert with_symptoms.index("init") < without.index("init")


def test_a_save_clears_the_symptom_passages_and_the_first_search_stores_them(api, bank):
    question = QuestionFactory(slug="clip", title=f"Clipping gradients ({uuid.uuid4().hex})")
    HintFactory(question=question, order=1, text="Look at the norm before the step.")
    assert Question.objects.get(pk=question.pk).symptom_embeddings is None
    top(api, "clipping gradients")
    question.refresh_from_db()
    texts = semantic.question_symptom_texts(question)
    assert texts == ["It shows understanding.", "Look at the norm before the step."]
    assert len(question.symptom_embeddings) == len(texts) * encoder.DIMENSIONS * 2
    assert question.symptom_key == semantic.symptom_key(texts)
    stored = np.frombuffer(question.symptom_embeddings, dtype="<f2").reshape(len(texts), -1)
    assert np.allclose(stored, encoder.encoder().encode(texts), atol=2e-3)
    # A new hint (read after the question is saved) clears them; the next search reads it.
    HintFactory(question=question, order=2, text="Clip after backward, before step.")
    assert Question.objects.get(pk=question.pk).symptom_embeddings is None
    top(api, "clipping gradients")
    question.refresh_from_db()
    assert len(question.symptom_embeddings) == 3 * encoder.DIMENSIONS * 2
    # So does a save that may change why it is asked or the answer.
    question.save(update_fields=["why_asked"])
    assert Question.objects.get(pk=question.pk).symptom_embeddings is None


def test_a_bank_load_fills_the_symptom_passages(bank):
    Question.objects.update(symptom_embeddings=None, symptom_key="")
    semantic.fill(Question.objects.all())
    for question in Question.objects.all():
        texts = semantic.question_symptom_texts(question)
        assert question.symptom_key == semantic.symptom_key(texts)
        assert len(question.symptom_embeddings) == len(texts) * encoder.DIMENSIONS * 2


def _installed_dir():
    import importlib.util

    spec = importlib.util.find_spec(encoder.MODEL_PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    return encoder.Path(next(iter(spec.submodule_search_locations))) / encoder.MODEL_DIR
