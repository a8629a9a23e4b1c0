"""Fairness with abusive accounts (issue 28): a normal learner's verdicts, idle and beside four
accounts that keep backlogs of slow code through every path to the grader, in one run.

The site runs with its defaults (the submission budget: SUBMISSION_RATE, SUBMISSIONS_WAITING_MAX;
one submission per learner in flight; the time limit fitted to the reference), Redis, PostgreSQL
and a Celery CPU worker as compose starts it. Each abusive account loops over the four paths,
posting code that sleeps to its time limit: the question page's form, `POST /api/submissions/`, a
mock interview's code answer (a new interview each time, until the daily limit), and a code review
(`POST /api/reviews/<slug>/solve/`, then the code). A refusal (429, or the page's message) only
makes it try the next path a moment later. Meanwhile the normal learner submits correct code,
one submission a few seconds after the verdict of the last (under the budget's rate), as in the
idle phase before.

Prints the normal learner's POST -> verdict p50/p95 idle and under abuse, their ratio (goal: p95
within 2x of idle), what the abusers got through on each path, and the load average.

    .venv/bin/python bench/fairness.py [-n 12] [--pause 4] [--abusers 4]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_bench_fairness]
        [--redis-url redis://127.0.0.1:6379/13]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from grading import SLEEPER, SOLUTION, _site  # noqa: E402 - sibling script
from pipeline import load, start_worker  # noqa: E402 - sibling script

PATHS = ("page", "api", "interview", "review")


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in seconds)
    return statistics.median(ms), ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=12, help="the normal learner's, per phase")
    parser.add_argument("--pause", type=float, default=4.0, help="between their submissions")
    parser.add_argument("--abusers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_bench_fairness"
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
    )
    args = parser.parse_args()
    python = os.environ.get("GRADER_PYTHON", str(ROOT / ".venv-grader" / "bin" / "python"))
    name = _site(args, python)

    import redis
    from api import _drop_database
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from practice.models import Bookmark, ReviewCard, Submission
    from quizbank.models import Question

    # _site lifts the budget for the throughput benches; this one measures the site's own.
    settings.SUBMISSION_RATE = os.environ.get("SUBMISSION_RATE_DEFAULT", "20/min")
    question = Question.objects.get()
    users = get_user_model().objects
    broker = redis.Redis.from_url(args.redis_url)
    broker.flushdb()

    def client_for(username: str) -> Client:
        client = Client()
        client.force_login(users.create_user(username, password="bench-password-123"))
        return client

    normal = client_for("normal")
    abusers = {f"abuser{i}": client_for(f"abuser{i}") for i in range(args.abusers)}
    for username in abusers:
        Bookmark.objects.create(user=users.get(username=username), question=question)

    def verdict_of(pk: int) -> str:
        while True:
            status = Submission.objects.values_list("status", flat=True).get(pk=pk)
            if status not in ("queued", "running"):
                return status
            time.sleep(0.02)

    def normal_run(count: int) -> list[float]:
        seconds = []
        for _ in range(count):
            t0 = time.perf_counter()
            response = normal.post(
                "/api/submissions/",
                {"question": question.slug, "code": SOLUTION},
                "application/json",
            )
            assert response.status_code == 201, response.content
            assert verdict_of(response.json()["id"]) == "passed"
            seconds.append(time.perf_counter() - t0)
            time.sleep(args.pause)  # a learner reading the verdict: within the budget's rate
        return seconds

    accepted: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    stop = threading.Event()

    def abuse(username: str, client: Client) -> None:
        user = users.get(username=username)
        index = 0
        while not stop.is_set():
            path = PATHS[index % len(PATHS)]
            index += 1
            before = Submission.objects.filter(user=user).count()
            if path == "page":
                client.post(f"/questions/{question.slug}/submissions/", {"code": SLEEPER})
            elif path == "api":
                client.post(
                    "/api/submissions/",
                    {"question": question.slug, "code": SLEEPER},
                    "application/json",
                )
            elif path == "interview":
                created = client.post(
                    "/api/interviews/", {"questions": 1, "minutes": 45}, "application/json"
                )
                if created.status_code == 201:
                    client.post(
                        f"/api/interviews/{created.json()['id']}/answer/",
                        {"question": question.slug, "code": SLEEPER},
                        "application/json",
                    )
            else:
                # Due again, so the code review reopens (a learner waiting a day would).
                ReviewCard.objects.filter(user=user).update(due=timezone.now())
                client.post(f"/api/reviews/{question.slug}/solve/")
                client.post(
                    "/api/submissions/",
                    {"question": question.slug, "code": SLEEPER},
                    "application/json",
                )
            made = Submission.objects.filter(user=user).count() - before
            accepted[path] += made
            refused[path] += made == 0
            time.sleep(0.2)
        connection.close()

    worker = start_worker(args)
    try:
        warm = client_for("warm")
        for _ in range(3):  # the zygotes start, and the reference's time is measured
            response = warm.post(
                "/api/submissions/",
                {"question": question.slug, "code": SOLUTION},
                "application/json",
            )
            verdict_of(response.json()["id"])
        print(f"{os.cpu_count()} CPUs, GRADER_SLOTS={settings.GRADER_SLOTS}; {load()}")
        idle = normal_run(args.n)
        print(f"   idle done; {load()}")
        threads = [threading.Thread(target=abuse, args=item) for item in abusers.items()]
        for thread in threads:
            thread.start()
        time.sleep(5)  # the backlogs fill
        backlog = Submission.objects.filter(
            user__username__startswith="abuser", status__in=["queued", "running"]
        ).count()
        abused = normal_run(args.n)
        stop.set()
        for thread in threads:
            thread.join()
        print(f"   abused done; {load()}")
        idle_p50, idle_p95 = percentiles(idle)
        abused_p50, abused_p95 = percentiles(abused)
        print(
            f"abusive accounts: {args.abusers}, each looping over {', '.join(PATHS)}; "
            f"{backlog} of theirs unfinished when the normal learner started"
        )
        print(
            "  submissions they got in, per path: " + ", ".join(f"{p} {accepted[p]}" for p in PATHS)
        )
        print(
            "  tries refused, per path:           " + ", ".join(f"{p} {refused[p]}" for p in PATHS)
        )
        print(f"normal learner, idle:          p50 {idle_p50:7.0f} ms   p95 {idle_p95:7.0f} ms")
        print(f"normal learner, beside abuse:  p50 {abused_p50:7.0f} ms   p95 {abused_p95:7.0f} ms")
        print(f"p95 beside abuse / idle: {abused_p95 / idle_p95:.2f}x (goal <= 2x)")
    finally:
        stop.set()
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        broker.flushdb()
        connection.close()
        _drop_database(name)


if __name__ == "__main__":
    main()
