"""Benchmark `load_bank` on a bank already loaded (what every `make run` does), side by side:
the quick path (no file changed since the last load: each question folder is only hashed) and
the full path (every file read, validated and compared, as each load did before the quick path;
forced here by forgetting the recorded file hashes before each run).

    .venv/bin/python bench/load_bank.py [--runs 5]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_bench_load]

Creates (and finally drops) a scratch PostgreSQL database and loads fixtures/bank into it first.
The two paths take turns, so a loaded machine slows each alike. Django's own start-up (about as
long again on a loaded machine) is not counted: it is the same for both.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_bench_load"
        ),
    )
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizbank.settings")

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from quizbank.bank.sync import bank_load
    from quizbank.models import Question

    if connection.vendor != "postgresql":
        sys.exit("bench/load_bank.py: --database-url: must be a PostgreSQL database")
    name = connection.settings_dict["NAME"]
    _postgres(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _postgres(args.database_url, f'CREATE DATABASE "{name}"')
    bank = [ROOT / "fixtures" / "bank"]
    try:
        call_command("migrate", verbosity=0)
        first = bank_load(paths=bank)
        print(f"{len(first.created)} questions loaded")
        timings: dict[str, list[float]] = {"quick (files hashed)": [], "full (files read)": []}
        for _ in range(args.runs):
            for label in timings:
                if label.startswith("full"):
                    Question.objects.update(bank_files_digest="")
                started = time.perf_counter()
                report = bank_load(paths=bank)
                timings[label].append(time.perf_counter() - started)
                assert not report.created and not report.updated, report
        quick = statistics.median(timings["quick (files hashed)"])
        print(f"{'load of an unchanged bank':<28} {'median s':>9} {'min s':>7} {'x quick':>8}")
        for label, values in timings.items():
            median = statistics.median(values)
            print(f"{label:<28} {median:9.2f} {min(values):7.2f} {median / quick:8.1f}")
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
