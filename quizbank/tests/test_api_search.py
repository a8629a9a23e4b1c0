"""Search finds the right question when a learner types an interview question in their own words.

Every test runs twice: with the database's ranker (PostgreSQL full-text search in CI) and with the
Python ranker that SQLite uses."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from quizbank import search, selectors
from quizbank.models import Question

from .factories import QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db

QUESTIONS = [
    (
        "zero-grad",
        "Why must gradients be reset between optimizer steps?",
        "A colleague's training loop never calls optimizer.zero_grad(). What happens and why?",
        ["gradient accumulation", "Optimizer.zero_grad"],
        "backward() adds into .grad instead of overwriting it, so stale gradients pile up"
        " from one iteration to the next.",
    ),
    (
        "view-vs-reshape",
        "view, reshape and permute: when does each work?",
        "Explain how view differs from reshape and what contiguity has to do with it.",
        ["torch.Tensor.view", "torch.reshape", "contiguous memory"],
        "view never copies and needs compatible strides; reshape copies when it must.",
    ),
    (
        "train-vs-eval-mode",
        "What changes when you call model.eval()?",
        "Which layers behave differently in training and evaluation mode?",
        ["Module.eval", "Dropout", "BatchNorm running statistics"],
        "Dropout stops dropping and batch norm uses running statistics at test time.",
    ),
    (
        "move-to-gpu",
        "Moving a model and its data to a device",
        "How do you write device-agnostic code that runs on a CPU or a CUDA GPU?",
        ["torch.device", "Tensor.to"],
        "Pick torch.device('cuda' if available else 'cpu') once and call .to(device).",
    ),
    (
        "save-load-models",
        "Saving and loading a trained model",
        "How do you persist a model's weights and load them later for inference?",
        ["state_dict", "torch.save", "torch.load"],
        "Save model.state_dict() to disk with torch.save and load it with weights_only=True.",
    ),
]


@pytest.fixture(autouse=True, params=["auto", "python"])
def ranker(request, settings):
    """Every test runs with the database's ranker and with the Python one (SQLite's)."""
    settings.SEARCH_RANKER = request.param
    return request.param


@pytest.fixture(autouse=True)
def bank():
    topic = TopicFactory(slug="general")
    for slug, title, prompt, concepts, answer in QUESTIONS:
        QuestionFactory(
            slug=slug,
            title=title,
            prompt=prompt,
            concepts=concepts,
            answer=answer,
            primary_topic=topic,
        )


def top(api, text):
    response = api.get("/api/questions/", {"search": text})
    assert response.status_code == 200
    return [row["slug"] for row in response.json()["results"]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("why do I have to zero the gradients every iteration", "zero-grad"),
        ("difference between view and reshape", "view-vs-reshape"),
        ("my model gives different results at test time, dropout?", "train-vs-eval-mode"),
        ("how to run my code on a cuda gpu", "move-to-gpu"),
        ("persist model weights to disk", "save-load-models"),
        ("contiguous", "view-vs-reshape"),
    ],
)
def test_the_best_match_comes_first(api, text, expected):
    results = top(api, text)
    assert results and results[0] == expected, results


def test_words_in_the_title_outrank_the_same_words_in_the_prompt(api):
    # (the prompt's match, scoring under the relevance floor set by the best, is not even listed)
    topic = TopicFactory(slug="other")
    QuestionFactory(
        slug="prompt-mentions",
        title="Unrelated",
        prompt="Explain broadcasting.",
        primary_topic=topic,
    )
    QuestionFactory(slug="title-mentions", title="Broadcasting rules", primary_topic=topic)
    assert top(api, "broadcasting")[0] == "title-mentions"


def test_answers_are_searched_when_no_question_is_about_the_words(api):
    topic = TopicFactory(slug="other")
    QuestionFactory(
        slug="in-the-answer",
        title="Unrelated",
        answer="Quantization trades precision for speed.",
        primary_topic=topic,
    )
    assert top(api, "quantization precision") == ["in-the-answer"]
    # an answer holding only some of the words is not enough
    assert top(api, "quantization zebra") == []


def test_search_combines_with_filters(api):
    assert top(api, "gradients optimizer") != []
    response = api.get("/api/questions/", {"search": "gradients", "difficulty": "hard"})
    assert response.json()["count"] == 0


def test_search_with_no_words_does_not_filter(api):
    assert len(top(api, "?!")) == len(QUESTIONS)


def test_words_of_a_script_the_bank_is_not_written_in_find_nothing(api):
    # Not "no search": the whole list under a Russian query would read as its results.
    for text in ("градиент взрыв", "梯度爆炸"):
        response = api.get("/api/questions/", {"search": text})
        assert response.status_code == 200
        assert response.json()["count"] == 0, text


def test_full_width_letters_ligatures_and_accents_read_as_plain_letters(api):
    assert top(api, "ｃｏｎｔｉｇｕｏｕｓ")[:1] == ["view-vs-reshape"]
    assert top(api, "ﬁnd the contiguous one")[:1] == top(api, "find the contiguous one")[:1]
    assert top(api, "contígüous")[:1] == ["view-vs-reshape"]


def test_search_text_with_query_syntax_is_harmless(api):
    assert top(api, "view & | ! reshape:* ('")[0] == "view-vs-reshape"


def test_postgres_stems_words(api):
    # "reshaping" and "permuted" stem to the words of the view-vs-reshape question
    assert top(api, "reshaping permuted")[0] == "view-vs-reshape"


def test_a_query_about_nothing_in_the_bank_finds_nothing(api):
    response = api.get("/api/questions/", {"search": "pizza recipe"})
    assert response.json()["count"] == 0


def test_matches_are_marked_in_the_title_and_a_snippet_of_the_prompt(api):
    QuestionFactory(
        slug="escaped",
        title="<b>Reshaping</b> & view",
        prompt="Nothing here. Why does reshape copy when view <fails>?",
        primary_topic=TopicFactory(slug="other"),
    )
    rows = {
        r["slug"]: r for r in api.get("/api/questions/", {"search": "reshape"}).json()["results"]
    }
    row = rows["escaped"]
    assert row["title_html"] == "&lt;b&gt;<mark>Reshaping</mark>&lt;/b&gt; &amp; view"
    assert row["snippet"] == "Why does <mark>reshape</mark> copy when view &lt;fails&gt;?"


def test_a_list_without_search_has_plain_titles_and_no_snippet(api):
    row = api.get("/api/questions/").json()["results"][0]
    assert row["snippet"] == ""
    assert "<mark>" not in row["title_html"]


def test_a_misspelt_word_is_read_as_the_nearest_word_of_a_title(api):
    assert top(api, "contigous")[0] == "view-vs-reshape"


def test_interview_filler_does_not_outweigh_pytorch_names(api):
    assert top(api, "Explain why model.eval() is important, with an example")[0] == (
        "train-vs-eval-mode"
    )


def test_a_word_the_bank_never_uses_outweighs_an_everyday_bank_phrase(api):
    # "zero the gradients" alone finds its question; beside words no title, concept or slug uses
    # ("hill", "road") it is what the query is about no more than they are.
    assert top(api, "zero the gradients")[0] == "zero-grad"
    response = api.get("/api/questions/", {"search": "zero the gradients of a hill road"})
    assert response.json()["count"] == 0


def test_a_form_of_a_bank_word_is_not_foreign(api):
    # "reshaping" is no title's word, but "reshape" is: it stays a term the bank is about.
    assert top(api, "reshaping contiguous")[0] == "view-vs-reshape"


def test_an_everyday_word_is_not_read_as_a_misspelt_bank_word(api):
    # "cookies" is two edits from "copies" (in a prompt), but too short to carry two slips.
    QuestionFactory(
        slug="copies",
        title="When does reshape return copies?",
        prompt="Copies and views.",
        primary_topic=TopicFactory(slug="copying"),
    )
    assert top(api, "copies")[0] == "copies"
    assert api.get("/api/questions/", {"search": "batch of cookies"}).json()["count"] == 0


def test_a_search_alone_pages_through_its_ranked_matches_in_few_queries(
    api, django_assert_max_num_queries
):
    topic = TopicFactory(slug="many")
    for n in range(7):
        QuestionFactory(slug=f"grad-{n}", title=f"Gradient question {n}", primary_topic=topic)
    body = api.get("/api/questions/", {"search": "gradient", "page_size": 100}).json()
    everything = [row["slug"] for row in body["results"]]
    assert len(everything) >= 7
    pages = []
    for number in (1, 2, 3):
        body = api.get("/api/questions/", {"search": "gradient", "page_size": 3, "page": number})
        assert body.json()["count"] == len(everything)
        pages += [row["slug"] for row in body.json()["results"]]
    assert pages == everything[:9]
    assert api.get("/api/questions/", {"search": "gradient", "page": 9}).status_code == 404
    # The words the search read, the ranking, and one page of rows: no count of its own.
    with django_assert_max_num_queries(3):
        api.get("/api/questions/", {"search": "gradient", "page_size": 3, "page": 2})


def test_a_question_asked_as_its_title_asks_it_comes_first(api):
    topic = TopicFactory(slug="tensors")
    QuestionFactory(
        slug="constructor",
        title="torch.tensor() or torch.Tensor(): which tensor do you get?",
        concepts=["torch.tensor", "torch.Tensor"],
        primary_topic=topic,
    )
    QuestionFactory(
        slug="what-is-a-tensor",
        title="What is a tensor, and what does it carry?",
        concepts=["torch.Tensor"],
        primary_topic=topic,
    )
    assert top(api, "What is a tensor?")[0] == "what-is-a-tensor"


def test_a_word_an_answer_uses_is_not_read_as_a_misspelt_title_word(api):
    # "delay" is one edit from "decay", a title's word; but an answer uses "delay" as itself.
    QuestionFactory(
        slug="decay",
        title="Learning rate decay",
        prompt="When do you lower the step size?",
        primary_topic=TopicFactory(slug="schedules"),
    )
    QuestionFactory(
        slug="streams",
        title="Overlapping copies with compute",
        answer="A copy on its own stream hides the delay of the transfer.",
        primary_topic=TopicFactory(slug="gpu"),
    )
    assert "decay" not in top(api, "delay")
    assert top(api, "decya")[0] == "decay"


@pytest.fixture
def distributed():
    topic = TopicFactory(slug="distributed")
    QuestionFactory(
        slug="ring",
        title="Simulate a ring all-reduce",
        prompt="Count what each rank sends.",
        concepts=["torch.distributed.all_reduce"],
        primary_topic=topic,
    )
    QuestionFactory(
        slug="layer-norm",
        title="Layer normalization from scratch",
        prompt="Normalize each row.",
        concepts=["torch.nn.LayerNorm"],
        primary_topic=topic,
    )


def test_a_compound_finds_the_words_the_bank_writes_apart(api, distributed):
    assert top(api, "allreduce")[0] == "ring"
    assert top(api, "ring allreduce")[0] == "ring"
    row = api.get("/api/questions/", {"search": "allreduce"}).json()["results"][0]
    assert "all-<mark>reduce</mark>" in row["title_html"]


def test_british_spelling_finds_the_american_one(api, distributed):
    from quizbank.search import search_terms

    assert search_terms("visualising behaviour")[0].phrases == ["visualising", "visualizing"]
    assert search_terms("visualising behaviour")[1].phrases == ["behaviour", "behavior"]
    assert top(api, "layer normalisation")[0] == "layer-norm"


def test_a_plural_finds_the_synonyms_of_its_singular(api):
    from quizbank.search import search_terms

    (term,) = search_terms("second derivatives")
    assert "hessian" in term.phrases and "double backward" in term.phrases


def test_what_is_left_of_a_contraction_is_no_term(api):
    from quizbank.search import search_terms

    assert [t.phrases[0] for t in search_terms("why don't my gradients change")] == [
        "gradients",
        "change",
    ]


def test_a_slip_inside_a_name_is_corrected(api):
    QuestionFactory(
        slug="custom-function",
        title="Write a custom autograd Function",
        concepts=["torch.autograd.Function"],
        primary_topic=TopicFactory(slug="autograd"),
    )
    assert top(api, "autograd.Fucntion")[0] == "custom-function"
    row = api.get("/api/questions/", {"search": "autograd.Fucntion"}).json()["results"][0]
    assert "<mark>Function</mark>" in row["title_html"]


def test_terms_found_side_by_side_outrank_the_same_terms_apart(api):
    topic = TopicFactory(slug="training")
    QuestionFactory(
        slug="a-apart",
        title="A question about training",
        prompt="Weight decay is one tool. Much later, we talk about warmup.",
        primary_topic=topic,
    )
    QuestionFactory(
        slug="b-together",
        title="A question about training",
        prompt="Some schedules add warmup before weight decay starts.",
        primary_topic=topic,
    )
    # (Fused with BM25 and meaning, a third question may follow: one holding "weights".)
    assert top(api, "weight decay warmup")[:2] == ["b-together", "a-apart"]


def test_a_slip_whose_stem_an_answer_uses_still_finds_the_title_word(api, settings):
    # "distilation" reads as "distil" (fallback.py's light stem), which an answer uses as itself
    # (British "distil"), so it is no slip to correct; but "distil" begins the title's "distill",
    # a form of it, as PostgreSQL's stemmer reads both alike.
    QuestionFactory(
        slug="distillation",
        title="Knowledge distillation loss",
        prompt="Train a small student on a large teacher's soft targets.",
        answer="The student learns to distil what the teacher knows from its temperature.",
        primary_topic=TopicFactory(slug="compression"),
    )
    # The full-text ranker's own reading (on a bank this small, meaning alone would find it).
    settings.SEARCH_SEMANTIC = "off"
    assert top(api, "knowlege distilation")[:1] == ["distillation"]
    assert top(api, "knowledge distilation")[:1] == ["distillation"]


def searched(api, params):
    """A search's response body and the number of database queries it ran."""
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/api/questions/", params)
    assert response.status_code == 200
    return response.json(), len(queries)


def test_the_same_search_again_reuses_its_ranking(api):
    topic = TopicFactory(slug="many")
    for n in range(3):
        QuestionFactory(slug=f"grad-{n}", title=f"Gradient question {n}", primary_topic=topic)
    first, ranked = searched(api, {"search": "gradient", "page_size": 2})
    assert first["count"] >= 3
    again, reused = searched(api, {"search": "gradient", "page_size": 2})
    assert again == first
    # Only the page's rows are read: no query of the ranking.
    assert reused == 1 < ranked
    # The next page and a filter ticked narrow the same results.
    body, _ = searched(api, {"search": "gradient", "page_size": 2, "page": 2})
    assert body["count"] == first["count"]
    assert {row["slug"] for row in body["results"]}.isdisjoint(
        row["slug"] for row in first["results"]
    )
    body, count = searched(api, {"search": "gradient", "topic": "many"})
    assert {row["slug"] for row in body["results"]} == {"grad-0", "grad-1", "grad-2"}
    assert count < ranked + 2


def test_a_search_after_a_change_to_the_bank_ranks_it(api):
    assert top(api, "freeze layers fine tuning") == []
    question = Question.objects.get(slug="move-to-gpu")
    question.title = "Freezing layers when fine-tuning"
    question.concepts = ["requires_grad", "fine-tuning"]
    question.save()
    assert top(api, "freeze layers fine tuning")[:1] == ["move-to-gpu"]
    question.status = Question.Status.DRAFT
    question.save()
    assert "move-to-gpu" not in top(api, "freeze layers fine tuning")


def test_learners_never_read_the_search_a_curator_ran(api, staff):
    QuestionFactory(
        slug="dropout-draft",
        title="Dropout at inference time",
        status=Question.Status.DRAFT,
        primary_topic=Question.objects.get(slug="zero-grad").primary_topic,
    )
    assert "dropout-draft" not in top(api, "dropout inference")
    api.force_authenticate(staff)
    assert "dropout-draft" in top(api, "dropout inference")
    api.force_authenticate(None)
    assert "dropout-draft" not in top(api, "dropout inference")


def test_kept_results_are_read_until_the_cache_is_off(api, settings):
    text = "freeze layers fine tuning"
    assert top(api, text) == []
    rows = selectors.question_rows(user=AnonymousUser())
    key = search._results_key(rows, text)
    assert cache.get(key).ids == []  # what the search above kept
    # Another result planted under that key is what the same search answers next.
    moved = Question.objects.get(slug="move-to-gpu")
    cache.set(key, search.SearchResults([moved.pk], ""))
    assert top(api, text) == ["move-to-gpu"]
    settings.SEARCH_RESULTS_CACHE = 0
    assert top(api, text) == []
    # Another way of ranking is not answered with this one's results.
    settings.SEARCH_SEMANTIC = "off" if settings.SEARCH_SEMANTIC != "off" else "fused"
    assert search._results_key(rows, text) != key
