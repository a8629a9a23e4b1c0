"""Benchmark the question API on 10,000 questions in a scratch PostgreSQL database.

    .venv/bin/python bench/api.py [--questions 10000] [--requests 300]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_bench]
        [--redis-url redis://127.0.0.1:6379/13]

Creates (and finally drops) the scratch database, fills it with generated questions spread over the
real taxonomy, then times requests through Django's full stack (middleware, DRF, django-filter,
serialisation; no network) and prints p50/p95, queries per request and the ratio to the targets
(list p95 <= 20 ms, search p95 <= 40 ms), and the ratio of each search's p95 to the list's,
measured in the same run (a loaded machine slows both).

Each search runs four ways in the same run: full text only (SEARCH_SEMANTIC=off), fused (the
full-text ranker, BM25 and the sentence encoder) with the query's embedding computed in every
request (a query never typed before), fused with only the embedding cached (ranked again), and
fused with the search's results cached (SEARCH_RESULTS_CACHE: the same search again, as a next
page or a filter ticked asks it); the first three rank every request. The load average is
printed before and after: the targets are for a quiet machine. The generated questions'
embeddings are those of the real titles they copy, with a little noise: encoding 10,000
generated questions would take far longer than the benchmark, and a search's cost does not depend
on the vectors' values.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def corpus(root: Path) -> dict[str, list]:
    """Titles, sentences and concepts of the real bank, so generated questions have the word
    frequencies of real ones (a tiny random vocabulary would make every question match every
    search, which no real bank does)."""
    import re

    import yaml

    titles, sentences, concepts = [], [], []
    for path in sorted(root.glob("*/question.yaml")):
        meta = yaml.safe_load(path.read_text())
        answer = (path.parent / "answer.md").read_text()
        prose = re.sub(r"```.*?```", " ", answer + "\n" + meta["prompt"], flags=re.S)
        titles.append(meta["title"])
        concepts += meta["concepts"]
        sentences += [s.strip() for s in re.split(r"(?<=[.?!])\s+", prose) if len(s.split()) > 4]
    if len(titles) < 5:
        sys.exit(f"bench/api.py: {root}: needs the real bank's questions to build a corpus")
    return {"titles": titles, "sentences": sentences, "concepts": concepts}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database afterwards")
    parser.add_argument(
        "--redis-url", help="cache in this scratch Redis database, as production does (cleared)"
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_bench"
        ),
    )
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = args.database_url
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizbank.settings")
    # Without --redis-url the cache is the process's own (the embedded default); with it, each
    # request reads the bank version from Redis, as in production.
    os.environ.pop("REDIS_URL", None)
    if args.redis_url:
        os.environ["REDIS_URL"] = args.redis_url

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, connections
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from quizbank.bank.files import read_bank
    from quizbank.bank.sync import _upsert_taxonomy
    from quizbank.models import Application, Question, Topic

    if connection.vendor != "postgresql":
        sys.exit("bench/api.py: --database-url: must be a PostgreSQL database")
    if args.redis_url:
        from django.core.cache import cache

        cache.clear()  # a scratch Redis database: nothing cached of an earlier run's bank
    name = connection.settings_dict["NAME"]
    _recreate_database(connections, name)

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    _upsert_taxonomy(read_bank([ROOT / "fixtures" / "bank"]).taxonomy or {})
    topics, apps = list(Topic.objects.all()), list(Application.objects.all())
    rng = random.Random(1234)
    text = corpus(ROOT / "fixtures" / "bank")

    def sentences(n: int) -> str:
        return " ".join(rng.choice(text["sentences"]) for _ in range(n))

    questions = [
        Question(
            slug=f"q-{i}",
            title=f"{rng.choice(text['titles'])} ({i})",
            prompt=sentences(3),
            answer=sentences(rng.randint(12, 30)),
            why_asked=sentences(2),
            concepts=rng.sample(text["concepts"], 3),
            difficulty=rng.choice(["easy", "medium", "hard"]),
            kind=rng.choice(["concept", "code"]),
            status="published" if rng.random() < 0.9 else "draft",
            primary_topic=rng.choice(topics),
        )
        for i in range(args.questions)
    ]
    from quizbank.search import encoder

    loading = time.perf_counter()
    encoder.encoder()  # what the first search of a web process pays (files hashed, weights read)
    print(f"encoder start-up: {time.perf_counter() - loading:.2f} s ({encoder.status().detail})")
    if encoder.encoder() is not None and encoder.encoder().runtime != "numpy":
        loading = time.perf_counter()
        encoder.Encoder(encoder.model_dir(), runtime="numpy")
        print(f"  the same with numpy running the layers: {time.perf_counter() - loading:.2f} s")
    _embed(questions, rng)
    from quizbank.search import bm25

    # Each question's BM25 words, as saving it computes them (bulk_create does not call save()).
    counting = time.perf_counter()
    for q in questions:
        bm25.refresh(q)
    counted = time.perf_counter() - counting
    print(
        f"BM25 words of {len(questions)} questions computed (as saving them does): {counted:.2f} s"
    )
    Question.objects.bulk_create(questions, batch_size=1000)
    through_topics, through_apps = Question.topics.through, Question.applications.through
    rows_t, rows_a = [], []
    for q in Question.objects.only("id", "primary_topic_id"):
        extra = {t.id for t in rng.sample(topics, 2)} | {q.primary_topic_id}
        rows_t += [through_topics(question_id=q.id, topic_id=t) for t in extra]
        rows_a += [through_apps(question_id=q.id, application_id=a.id) for a in rng.sample(apps, 2)]
    through_topics.objects.bulk_create(rows_t, batch_size=5000)
    through_apps.objects.bulk_create(rows_a, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(f"built {args.questions} questions in {time.perf_counter() - started:.1f} s")
    indexing = time.perf_counter()
    bm25.index(Question.objects.published())
    built = time.perf_counter() - indexing
    print(
        f"BM25 index of the published questions, from their stored words: {built:.2f} s"
        " (once per bank version and process);"
        f" splitting them into words instead took {counted:.2f} s above"
        f" (ratio {built / max(counted, 1e-9):.2f})"
    )
    print(f"load average (1, 5, 15 min) before timing: {_load()}")

    client = Client()
    cases = {
        "list": (
            "/api/questions/?topic=tensors&topic=autograd&difficulty=medium,hard&kind=code"
            "&application=computer-vision&page_size=20",
            20.0,
        ),
        "search": (
            "/api/questions/?search=why+does+my+gradient+explode+with+a+high+learning+rate"
            "&page_size=20",
            40.0,
        ),
        "search+filter": (
            "/api/questions/?search=contiguous+view+reshape+stride&topic=tensors&page_size=20",
            40.0,
        ),
        # A question pasted whole, and one common word that most of the bank holds.
        "search pasted": (
            "/api/questions/?search=What+is+the+difference+between+model.train()+and+"
            "model.eval()+and+why+does+it+matter+for+dropout%3F&page_size=20",
            40.0,
        ),
        "search broad": ("/api/questions/?search=optimizer&page_size=20", 40.0),
    }
    from django.conf import settings
    from django.test import override_settings

    model = encoder.encoder()
    print(
        f"{'request':<14} {'ranking':<22} {'p50 ms':>8} {'p95 ms':>8} {'target':>8}"
        f" {'p95/target':>10} {'queries':>8} {'p95/list':>9}"
    )
    list_p95 = 0.0
    for label, (url, target) in cases.items():
        # (ranking, label, forget the query's vector each time, keep the search's results)
        modes = [("off", "-", False, False)]
        if label != "list":
            modes = [("off", "full text only", False, False)]
            if model is not None:
                modes += [
                    ("fused", "fused, query encoded", True, False),
                    ("fused", "fused, query cached", False, False),
                    ("fused", "fused, results cached", False, True),
                ]
        for mode, name, forget, kept in modes:
            results_cache = settings.SEARCH_RESULTS_CACHE if kept else 0
            with override_settings(SEARCH_SEMANTIC=mode, SEARCH_RESULTS_CACHE=results_cache):
                for _ in range(10):  # warm caches and connections
                    assert client.get(url).status_code == 200
                timings = []
                for _ in range(args.requests):
                    if forget and model is not None:
                        model.forget_queries()
                    t0 = time.perf_counter()
                    response = client.get(url)
                    timings.append((time.perf_counter() - t0) * 1000)
                    assert response.status_code == 200
                with CaptureQueriesContext(connection) as queries:
                    count = client.get(url).json()["count"]
            p50, p95 = statistics.median(timings), percentile(timings, 0.95)
            list_p95 = list_p95 or p95
            print(
                f"{label:<14} {name:<22} {p50:8.1f} {p95:8.1f} {target:8.0f} {p95 / target:10.2f}"
                f" {len(queries):8d} {p95 / list_p95:9.2f}   ({count} matches)"
            )
    if model is not None:
        from urllib.parse import parse_qs, urlsplit

        texts = [parse_qs(urlsplit(url).query).get("search", [""])[0] for url, _ in cases.values()]
        _passages(model, Question.objects.published(), [text for text in texts if text])
        _stages(model, Question.objects.published(), [text for text in texts if text])
    _rows(args.requests)
    print(f"load average (1, 5, 15 min) after timing: {_load()}")
    connection.close()
    if not args.keep:
        _drop_database(name)


def _rows(repeat: int) -> None:
    """One page of the list's rows (20 of a search's results) as the API reads it, beside the
    same rows read with the columns that search and load_bank store with a question
    (Question.DERIVED_FIELDS), as every list and page read them before stop 45: p50 / p95 ms, timed
    in turn."""
    from django.contrib.auth.models import AnonymousUser

    from quizbank import selectors
    from quizbank.models import Question
    from quizbank.tagging import tag_ids

    narrow = selectors.question_rows(user=AnonymousUser())
    wide = (
        Question.objects.published()
        .select_related("primary_topic")
        .defer("prompt", "answer", "why_asked", "concepts", "search_vector", "answer_vector")
        .annotate(topic_ids=tag_ids("topics"), application_ids=tag_ids("applications"))
    )
    # A page of search results: 20 questions from all over the bank, by id.
    published = list(Question.objects.published().order_by("pk").values_list("pk", flat=True))
    page = published[:: max(1, len(published) // 20)][:20]
    timings: dict[str, list[float]] = {"without them": [], "with them": []}
    for _ in range(repeat):
        for name, queryset in (("without them", narrow), ("with them", wide)):
            t0 = time.perf_counter()
            list(queryset.filter(pk__in=page))
            timings[name].append((time.perf_counter() - t0) * 1000)
    (p50, p95), (w50, w95) = (
        (statistics.median(runs), percentile(runs, 0.95)) for runs in timings.values()
    )
    print(
        f"a page of 20 rows without search's stored columns: {p50:.1f} / {p95:.1f} ms (p50 / p95);"
        f" with them: {w50:.1f} / {w95:.1f} ms (ratio of p50s {p50 / w50:.2f})"
    )


def _passages(model, queryset, texts: list[str], repeat: int = 50) -> None:
    """The symptom passages scored in two steps (semantic.Vectors.passage_scores) beside every one
    scored, for each search above: the time of each, and how many of the 20 questions nearest by
    their passages the two steps keep; the two steps both ways, their coarse product from 8-bit
    integers in onnxruntime (as search runs it where onnxruntime is installed) and from float32 in
    numpy. The generated questions' passages are their titles' with noise, and about 53 questions
    share each title: which copy of a title comes first is noise, so "kept" is a floor for a real
    bank's (tests/test_search_quality.py measures the real one)."""
    import dataclasses

    import numpy as np

    from quizbank.search import semantic

    found = semantic.vectors(queryset)
    if found.symptoms is None:
        return
    steps = "two steps" if found.basis is not None else "every passage (one step)"
    print(
        f"symptom passages: {len(found.symptoms)} of {len(found.pks)} questions, scored in {steps}"
        f"; above {semantic.EXACT_PASSAGES} passages, {semantic.COARSE_DIMENSIONS} dimensions"
        f" then the {semantic.SHORTLIST} best questions exactly"
    )
    ways = {"all": (found, True), "steps, int8": (found, False)}
    if found.basis is not None and found.coarse_product is not None:
        plain = dataclasses.replace(found)
        plain.coarse_product, plain.coarse = None, found.symptoms @ found.basis
        ways["steps, float32"] = (plain, False)
    print(
        f"{'query':<42}"
        + "".join(f" {name + ' ms':>17}" for name in ways)
        + "".join(f" {name + ' kept':>20}" for name in list(ways)[1:])
        + "   (kept: of the 20 nearest)"
    )
    for text in texts:
        query = model.query(text)
        timings, nearest = [], []
        for vectors, exact in ways.values():
            runs = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                scores = vectors.passage_scores(query, exact=exact)
                runs.append((time.perf_counter() - t0) * 1000)
            timings.append(statistics.median(runs))
            nearest.append(set(np.argsort(-scores, kind="stable")[:20]))
        print(
            f"{text[:42]:<42}"
            + "".join(f" {t:17.2f}" for t in timings)
            + "".join(f" {len(nearest[0] & n):>17d}/20" for n in nearest[1:])
        )


def _stages(model, queryset, texts: list[str], repeat: int = 50) -> None:
    """What a fused search costs, stage by stage, each timed alone (p50 / p95 ms of `repeat`
    runs): the query's forward pass (never cached; where onnxruntime runs the layers, numpy's
    beside it), its products with the questions' vectors and
    their passages', full text's ranking (PostgreSQL), BM25's, and the fusion. In a request the
    forward pass and the products run in the scoring thread while PostgreSQL ranks the words."""
    from functools import partial

    import numpy as np

    from quizbank.search import bm25, encoder, postgres, semantic
    from quizbank.search.terms import search_terms

    found = semantic.vectors(queryset)

    def timed(work) -> str:
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            work()
            runs.append((time.perf_counter() - t0) * 1000)
        return f"{statistics.median(runs):5.1f} / {percentile(runs, 0.95):5.1f}"

    def encode(text: str) -> None:
        model.forget_queries()
        model.query(text)

    # The same forward pass in numpy, beside onnxruntime's (where that runs the layers).
    plain = None
    if model.runtime != "numpy":
        plain = encoder.Encoder(encoder.model_dir(), runtime="numpy")

    def full_text(text: str) -> None:
        postgres.ranked(queryset.order_by(), search_terms(text), text)

    print(f"stages of a fused search, each alone (p50 / p95 ms; the layers run by {model.runtime})")
    print(
        f"{'query':<42} {'forward pass':>13}"
        + (f" {'numpy forward':>13}" if plain is not None else "")
        + f" {'questions':>13} {'passages':>13} {'full text':>13} {'BM25':>13} {'fusion':>13}"
    )
    for text in texts:
        query = model.query(text)
        # As a search reads them: the ranker fills in the terms' corrections, which BM25 reads.
        terms = search_terms(text)
        ids, _ = postgres.ranked(queryset.order_by(), list(terms), text)
        words = bm25.ranked(queryset, terms, semantic.CANDIDATES)
        similar = semantic._score(model, found, text)
        stages = (
            partial(encode, text),
            *([partial(plain.encode, [text])] if plain is not None else []),
            partial(np.matmul, found.matrix, query),
            partial(found.passage_scores, query),
            partial(full_text, text),
            partial(bm25.ranked, queryset, terms, semantic.CANDIDATES),
            partial(semantic.fuse, ids, words, similar, terms),
        )
        print(f"{text[:42]:<42}" + "".join(f" {timed(stage):>13}" for stage in stages))


def _load() -> str:
    return " ".join(f"{load:.1f}" for load in os.getloadavg())


def _embed(questions: list, rng: random.Random) -> None:
    """Each question's embedding: that of the real title it copies (each encoded once), plus a
    little noise, as the stored float16."""
    import numpy as np

    from quizbank.search import encoder

    model = encoder.encoder()
    if model is None:
        return
    titles = sorted({q.title.rsplit(" (", 1)[0] for q in questions})
    started = time.perf_counter()
    vectors = dict(zip(titles, model.encode(titles), strict=True))
    print(f"encoded {len(titles)} titles in {time.perf_counter() - started:.1f} s")
    noise = np.random.default_rng(rng.randrange(2**32))
    for q in questions:
        v = vectors[q.title.rsplit(" (", 1)[0]] + noise.normal(0, 0.01, encoder.DIMENSIONS)
        q.embedding = (v / np.linalg.norm(v)).astype("<f2").tobytes()
        q.embedding_key = "bench"
        # Its symptom passages (semantic.symptom_texts, asked_as lines included): as many as the
        # real bank's questions hold (22 on average, 14 to 37), each the title's embedding with
        # more noise.
        count = int(noise.integers(14, 31))
        passages = vectors[q.title.rsplit(" (", 1)[0]] + noise.normal(
            0, 0.05, (count, encoder.DIMENSIONS)
        )
        passages /= np.linalg.norm(passages, axis=1, keepdims=True)
        q.symptom_embeddings = passages.astype("<f2").tobytes()
        q.symptom_key = "bench"


def _admin_cursor(connections):  # a connection to the maintenance database
    import psycopg

    settings = connections["default"].settings_dict
    return psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )


def _recreate_database(connections, name: str) -> None:
    with _admin_cursor(connections) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop_database(name: str) -> None:
    from django.db import connections

    with _admin_cursor(connections) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
