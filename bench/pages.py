"""Benchmark the home page and the question list side by side, on the real bank.

    .venv/bin/python bench/pages.py [--requests 200]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_bench_pages]

Creates (and finally drops) a scratch PostgreSQL database, loads fixtures/bank into it, then times
anonymous requests through Django's full stack (middleware, views, templates; no network), the
pages taking turns so a loaded machine slows each alike: `/`, `/questions/` as served (facet counts
from the cache), and `/questions/` with the cache forgotten before each request (what every request
cost before the counts were cached). Prints p50/p95, requests per second, queries per request and
each one's time per request over the home page's. The cache is Redis when REDIS_URL is set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_bench_pages"
        ),
    )
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = args.database_url
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizbank.settings")

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from quizbank.bank.sync import bank_load
    from quizbank.caching import bank_changed

    if connection.vendor != "postgresql":
        sys.exit("bench/pages.py: --database-url: must be a PostgreSQL database")
    name = connection.settings_dict["NAME"]
    _postgres(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _postgres(args.database_url, f'CREATE DATABASE "{name}"')
    try:
        call_command("migrate", verbosity=0)
        report = bank_load(paths=[ROOT / "fixtures" / "bank"])
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        backend = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[1]
        print(f"{len(report.created)} questions; cache: {backend}")

        client = Client()
        cases = {
            "/": ("/", None),
            "/questions/": ("/questions/", None),
            "/questions/ uncached": ("/questions/", bank_changed),
        }
        timings: dict[str, list[float]] = {label: [] for label in cases}
        for url, _ in cases.values():  # warm connections, templates and the cache
            for _ in range(5):
                assert client.get(url).status_code == 200
        for _ in range(args.requests):
            for label, (url, before) in cases.items():
                if before:
                    before()
                started = time.perf_counter()
                response = client.get(url)
                timings[label].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
        print(
            f"{'page':<22} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} {'queries':>8}"
            f" {'time/home':>10}"
        )
        home = statistics.mean(timings["/"])
        for label, (url, before) in cases.items():
            if before:
                before()
            with CaptureQueriesContext(connection) as queries:
                client.get(url)
            mean = statistics.mean(timings[label])
            print(
                f"{label:<22} {statistics.median(timings[label]):8.1f}"
                f" {percentile(timings[label], 0.95):8.1f} {1000 / mean:8.0f}"
                f" {len(queries):8d} {mean / home:10.2f}"
            )
    finally:
        connection.close()
        _postgres(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _postgres(url: str, sql: str) -> None:
    import psycopg

    base = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql)


if __name__ == "__main__":
    main()
