"""The grading pipeline's throughput beside the sandbox pool's own rate, in one run (issue 28,
finding 8: end to end had run at 0.24-0.40 of the pool).

  (1) the sandbox pool alone: GRADER_SLOTS slots, a burst of jobs from as many threads;
  (2) end to end: 20 learners post 10 correct submissions each at once (POST /api/submissions/ ->
      Redis -> a Celery CPU worker as compose starts it -> verdict in PostgreSQL): verdicts/s from
      the first POST to the last verdict, with how many slots were busy on average and how many
      messages waited in Redis meanwhile (sampled every 100 ms);
      and the CPU each part spent per verdict (read from /proc), which bounds what any scheduling
      of the slots could reach on this machine's cores;
  (3) the fault run's mix: 200 submissions from 20 learners, one in ten sleeping past its time
      limit, posted at once: time to drain.

The pool is closed before the worker starts, so the two never share the cores. Each learner keeps
the site's defaults (one submission in flight per queue) but a budget large enough for the burst
(SUBMISSIONS_WAITING_MAX, SUBMISSION_RATE). Goals: (2) >= 0.8 of (1) and >= 25 verdicts/s when
the machine is quiet; (3) <= 30 s. The load average is printed beside the figures.

    .venv/bin/python bench/pipeline.py [--users 20] [--each 10] [--concurrency C]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_bench_pipeline]
        [--redis-url redis://127.0.0.1:6379/13]

--concurrency starts the worker with `-c C` instead of the settings' (to compare with the old
`-c GRADER_SLOTS`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from grading import JOB, SLEEPER, SOLUTION, _site, stats  # noqa: E402 - sibling script


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


TICK = os.sysconf("SC_CLK_TCK")


def _procs() -> dict[int, tuple[int, str, float, float]]:
    """pid -> (ppid, command name, own CPU seconds, reaped children's CPU seconds), from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        own = (int(fields[11]) + int(fields[12])) / TICK
        children = (int(fields[13]) + int(fields[14])) / TICK
        found[int(entry.name)] = (int(fields[1]), name, own, children)
    return found


def cpu(root: int, database: str) -> dict[str, float]:
    """CPU seconds used so far, by part: this process (the POSTs through Django, the sampler), the
    worker process (Celery and Django: its threads), the sandbox (every process under the worker,
    and those it reaped), PostgreSQL's backends for the bench's database still open at the end (the
    learners' closed ones are not counted), and redis-server."""
    procs = _procs()
    under: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (ppid, *_) in procs.items() if ppid in frontier} - under
        under |= frontier
    times = os.times()
    parts = {"bench process": times.user + times.system, "worker process": 0.0}
    parts["sandbox"] = sum(procs[pid][2] + procs[pid][3] for pid in under)
    parts["postgres"] = parts["redis"] = 0.0
    if root in procs:
        parts["sandbox"] += procs[root][3]
        if root != os.getpid():  # else the pool's client is this process, counted above
            parts["worker process"] = procs[root][2]
    for pid, (_, name, own, _) in procs.items():
        if name == "redis-server":
            parts["redis"] += own
        elif name == "postgres":
            try:
                command = (Path("/proc") / str(pid) / "cmdline").read_bytes()
            except OSError:
                continue
            if f" {database} ".encode() in command:
                parts["postgres"] += own
    return parts


def cpu_per_verdict(before: dict[str, float], after: dict[str, float], count: int) -> str:
    """CPU milliseconds per verdict by part, and the rate the machine's cores could give at most
    if every part kept them all busy (the ceiling no scheduling of the slots can beat)."""
    spent = {part: (after[part] - before[part]) * 1000 / count for part in after}
    total = sum(spent.values())
    listed = ", ".join(f"{part} {ms:.1f}" for part, ms in spent.items())
    cores = os.cpu_count() or 1
    ceiling = cores * 1000 / total if total else float("inf")
    return (
        f"CPU ms per verdict: {listed}; total {total:.1f} "
        f"(all {cores} cores busy would give at most {ceiling:.1f}/s)"
    )


def pool_rate(python: str, slots: int, count: int) -> float:
    from grader import SandboxPool

    with SandboxPool(python, slots=slots) as pool:
        for _ in range(slots):
            pool.grade(JOB)  # the reference's outputs, cached per zygote
        before = cpu(os.getpid(), "")
        t0 = time.perf_counter()
        with ThreadPoolExecutor(slots) as executor:
            results = list(executor.map(lambda _: pool.grade(JOB), range(count)))
        elapsed = time.perf_counter() - t0
        used = cpu_per_verdict(before, cpu(os.getpid(), ""), count)
    assert all(r["status"] == "passed" for r in results), results[:1]
    rate = count / elapsed
    print(f"(1) sandbox pool, {slots} slots: {count} verdicts in {elapsed:.2f} s = {rate:.1f}/s")
    print(f"   {used} (the bench process is the pool's client here)")
    return rate


def start_worker(args) -> subprocess.Popen:
    """The CPU worker as compose starts it (`-Q cpu -P threads`), unless told otherwise."""
    command = [sys.executable, "-m", "celery", "-A", "quizbank", "worker", "-Q", "cpu"]
    command += ["-P", "threads", "--without-gossip", "--without-mingle", "-l", "warning"]
    if args.concurrency:
        command += ["-c", str(args.concurrency)]
    return subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), start_new_session=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--each", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_bench_pipeline"
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
    )
    args = parser.parse_args()
    python = os.environ.get("GRADER_PYTHON", str(ROOT / ".venv-grader" / "bin" / "python"))
    count = args.users * args.each
    os.environ.update(SUBMISSIONS_WAITING_MAX=str(count), SUBMISSION_RATE="100000/min")
    # Production shape, as compose runs the web and the worker: DEBUG off (no query log).
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(24).hex())
    os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
    name = _site(args, python)  # Django set up against a scratch database with one exercise

    import redis
    from api import _drop_database
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from practice.models import Submission

    slots = settings.GRADER_SLOTS
    print(f"{os.cpu_count()} CPUs, GRADER_SLOTS={slots}; {load()}")
    pool = pool_rate(python, slots, count)
    print(f"   {load()}")

    broker = redis.Redis.from_url(args.redis_url)
    broker.flushdb()
    users = get_user_model().objects
    clients: dict[str, Client] = {}
    for i in range(args.users):
        clients[f"u{i}"] = Client()
        clients[f"u{i}"].force_login(users.create_user(f"u{i}", password="bench-password-123"))

    def post(username: str, code: str) -> int:
        response = clients[username].post(
            "/api/submissions/",
            {"question": "scale", "code": code},
            "application/json",
            secure=True,  # DEBUG off redirects plain HTTP
        )
        assert response.status_code == 201, response.content
        return response.json()["id"]

    def unfinished(ids: list[int]) -> int:
        return Submission.objects.filter(pk__in=ids, status__in=["queued", "running"]).count()

    def burst(codes: dict[str, list[str]]) -> tuple[float, list[int], tuple[float, float, float]]:
        """Each learner posts their codes one after the other, all learners at once; returns the
        seconds from the first POST to the last verdict, the ids, and the mean of running rows
        and of messages in Redis while any was unfinished."""
        ids: list[int] = []
        lock = threading.Lock()
        posting = threading.Event()
        samples: list[tuple[int, int]] = []

        def learner(username: str) -> None:
            for code in codes[username]:
                pk = post(username, code)
                with lock:
                    ids.append(pk)
            connection.close()

        def sample() -> None:
            while not posting.is_set() or unfinished(list(ids)):
                running = Submission.objects.filter(status="running").count()
                samples.append((running, int(broker.llen("cpu"))))
                time.sleep(0.1)  # the bench's own queries stay a small load on the database
            connection.close()

        t0 = time.perf_counter()
        sampler = threading.Thread(target=sample)
        sampler.start()
        with ThreadPoolExecutor(len(codes)) as executor:
            list(executor.map(learner, codes))
        posted = time.perf_counter() - t0
        posting.set()
        while unfinished(ids):
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        sampler.join()
        busy = sum(r for r, _ in samples) / max(len(samples), 1)
        waiting = sum(q for _, q in samples) / max(len(samples), 1)
        return elapsed, ids, (busy, waiting, posted)

    worker = start_worker(args)
    try:
        warm = [post("u0", SOLUTION) for _ in range(3)]
        while unfinished(warm):  # the worker's zygotes start, and the reference is measured
            time.sleep(0.05)
        correct = {f"u{i}": [SOLUTION] * args.each for i in range(args.users)}
        database = connection.settings_dict["NAME"]
        before = cpu(worker.pid, database)
        elapsed, ids, (busy, waiting, posted) = burst(correct)
        used = cpu_per_verdict(before, cpu(worker.pid, database), count)
        passed = Submission.objects.filter(pk__in=ids, status="passed").count()
        rate = count / elapsed
        print(
            f"(2) end to end, {count} from {args.users} learners: {passed} passed in "
            f"{elapsed:.2f} s = {rate:.1f}/s; running rows {busy:.1f} of {slots} slots on "
            f"average, {waiting:.1f} messages waiting in Redis; the POSTs took {posted:.1f} s"
        )
        print(f"   {used}")
        print(f"   {load()}")
        latency = [
            (s.finished_at - s.queued_at).total_seconds()
            for s in Submission.objects.filter(pk__in=ids)
            if s.finished_at is not None
        ]
        stats("(2) POST -> verdict", latency)

        # (3): learner k's submission number k (mod 10) sleeps: spread over the learners.
        mixed = {
            f"u{i}": [SLEEPER if (j % 10) == (i % 10) else SOLUTION for j in range(args.each)]
            for i in range(args.users)
        }
        sleeping = sum(code == SLEEPER for codes in mixed.values() for code in codes)
        drain, ids, (busy, waiting, posted) = burst(mixed)
        print(
            f"(3) {count} mixed ({sleeping} sleeping to the time limit) from {args.users} "
            f"learners drained in {drain:.1f} s = {count / drain:.1f}/s; running rows "
            f"{busy:.1f} of {slots} slots on average, {waiting:.1f} messages waiting"
        )
        print(f"   {load()}")
        print()
        print(f"end to end / pool: {rate:.1f} / {pool:.1f} = {rate / pool:.2f} (goal >= 0.8)")
        print(f"burst of {count} from {args.users} learners: {rate:.1f}/s (goal >= 25/s quiet)")
        print(f"mixed drain: {drain:.1f} s (goal <= 30 s)")
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        broker.flushdb()
        connection.close()
        _drop_database(name)


if __name__ == "__main__":
    main()
