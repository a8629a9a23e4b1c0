"""Benchmark grading, three ways, in one run on the same exercise:

  (a) a cold process per submission (fresh interpreter: import torch, isolate, grade, exit);
  (b) the sandbox pool (a warm zygote forks an isolated child per submission);
  (c) end to end: POST /api/submissions/ -> verdict, through Redis and a real Celery worker;
  (d) "Run examples" (the visible checks only) beside a full submit, on a real bank exercise,
      interleaved in one pool, and a failing submit with its diagnosis;
  (e) fairness (issue 13, finding 8): one learner posts a backlog of code that sleeps, then other
      learners post correct code while it waits; POST -> verdict through Redis and a Celery
      worker, twice: "before" (no per-learner cap, a flat 10 s limit, one slot per core) and
      "after" (the defaults: one submission per learner in flight, the limit fitted to the
      reference, two slots per core); then a mix of many learners' submissions, one in ten
      sleeping, posted at once: time to drain it and POST -> verdict.

  (f) --before REF: the pool's p50 on the code at git REF and on this tree, side by side in one
      run (rounds alternate which goes first), for a plain job and for a bank exercise with
      forbid rules (traps armed, check handles bound); nothing else runs.
  (g) --before-after REF (issue 23): a full submit of one bank exercise (its reference, and a wrong
      solution with its diagnosis) graded by the grader package of a git ref ("before") and by
      the working tree's ("after"), each in a fresh pool, in alternating rounds in one run.

    .venv/bin/python bench/grading.py --before-after main [--slug S] [--rounds 3] [-n 16]
    .venv/bin/python bench/grading.py [-n 40] [--cold 8] [--burst 100] [--only-fairness]
        [--before main [--rounds 4]]
        [--slow 10] [--others 5] [--each 4] [--gap 0.2] [--mixed-users 10] [--mixed-each 10]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_bench_grading]
        [--redis-url redis://127.0.0.1:6379/14]

Prints p50/p95 per submission, throughput, and the ratios (targets: (c) p50 <= 150 ms; (b) >= 20x
faster than (a); >= 25 verdicts/s sustained on 2 cores; (e) the other learners' p95 under 2 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHECKS = [
    {
        "name": "example",
        "visible": True,
        "code": "out = scale(torch.ones(3), 2.0)",
        "compare": "out",
    },
    {"name": "random", "code": "out = scale(torch.randn(4, 5), -1.5)", "compare": "out"},
    {"name": "empty", "code": "out = scale(torch.empty(0), 3.0)", "compare": "out"},
    {
        "name": "gradient",
        "code": "x = torch.randn(6, requires_grad=True)\nscale(x, 4.0).sum().backward()",
        "compare": "x.grad",
    },
    {"name": "dtype", "code": "out = scale(torch.arange(4), 2)", "compare": ["out", "out.dtype"]},
]
SOLUTION = "def scale(x, factor):\n    return x * factor\n"
JOB = {
    "code": SOLUTION,
    "reference": SOLUTION,
    "checks": CHECKS,
    "forbid": [],
    "time_limit": 10,
    "memory_limit_mb": 1024,
    "queue": "cpu",
}


def stats(label: str, seconds: list[float]) -> float:
    ms = sorted(s * 1000 for s in seconds)
    p50 = statistics.median(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(f"{label:<38} n={len(ms):<4} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms")
    return p50


def timed(fn, status: str = "passed") -> float:
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    assert result["status"] == status, result
    return elapsed


def throughput(label: str, grade, count: int, workers: int) -> float:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as executor:
        results = list(executor.map(lambda _: grade(), range(count)))
    elapsed = time.perf_counter() - t0
    assert all(r["status"] == "passed" for r in results)
    rate = count / elapsed
    print(f"{label:<38} {count} verdicts in {elapsed:.2f} s = {rate:.1f} verdicts/s")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=40, help="sequential submissions for (b), (c)")
    parser.add_argument("--cold", type=int, default=8, help="submissions for (a)")
    parser.add_argument("--burst", type=int, default=100, help="submissions for throughput")
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_bench_grading"
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    )
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--only-fairness", action="store_true", help="run (e) alone")
    parser.add_argument("--before-after", metavar="REF", help="run (g) alone against REF")
    parser.add_argument("--slug", default="stable-softmax-cross-entropy", help="(g) exercise")
    parser.add_argument("--slow", type=int, default=10, help="(e): the slow learner's backlog")
    parser.add_argument("--others", type=int, default=5, help="(e): other learners")
    parser.add_argument("--each", type=int, default=4, help="(e): correct submissions each")
    parser.add_argument("--gap", type=float, default=0.2, help="(e): seconds between their posts")
    parser.add_argument("--mixed-users", type=int, default=10, help="(e): learners in the mix")
    parser.add_argument("--mixed-each", type=int, default=10, help="(e): submissions each")
    parser.add_argument("--before", help="(f): a git ref to compare the pool's p50 with")
    parser.add_argument("--rounds", type=int, default=4, help="(f), (g): alternating rounds")
    args = parser.parse_args()

    from grader import SandboxPool

    python = os.environ.get("GRADER_PYTHON", str(ROOT / ".venv-grader" / "bin" / "python"))
    if args.before:
        before_after(args, python)
        return
    if args.only_fairness:
        fairness(args, python)
        return
    if args.before_after:
        submit_before_after(args, python)
        return
    print(f"grading one exercise with {len(CHECKS)} checks; {os.cpu_count()} CPUs\n")

    with SandboxPool(python, kind="gpu", prespawn=False) as cold:
        a = stats(
            "(a) cold process per submission",
            [timed(lambda: cold.grade(JOB)) for _ in range(args.cold)],
        )
    with SandboxPool(python, slots=args.slots) as pool:
        pool.grade(JOB)  # the reference's outputs are computed once per exercise, then cached
        b = stats("(b) sandbox pool", [timed(lambda: pool.grade(JOB)) for _ in range(args.n)])
        b_rate = throughput(
            f"(b) pool, {args.slots} slots", lambda: pool.grade(JOB), args.burst, args.slots
        )
        examples_vs_submit(pool, args.n)
    c, c_rate = end_to_end(args, python)
    fairness(args, python)

    print()
    print(f"(a)/(b) p50 ratio: {a / b:.1f}x faster through the pool (target >= 20x)")
    print(f"(c) p50: {c:.1f} ms (target <= 150 ms)")
    print(f"throughput: pool {b_rate:.1f}/s, end to end {c_rate:.1f}/s (target >= 25/s)")


# (f): run in a child process whose grader package is the tree named by argv[1].
_POOL_TIMES = """
import json, sys, time
tree, python, count, job, forbid_job = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:]
sys.path.insert(0, tree)
from grader import SandboxPool
jobs = {"plain": json.loads(job), "forbid": json.loads(forbid_job)}
times = {}
with SandboxPool(python, slots=1) as pool:
    for name, job in jobs.items():
        expected = pool.grade(job)["status"]  # the reference's outputs: cached from here on
        assert expected == "passed", (name, expected)
        times[name] = []
        for _ in range(count):
            t0 = time.perf_counter()
            assert pool.grade(job)["status"] == "passed"
            times[name].append(time.perf_counter() - t0)
print(json.dumps(times))
"""


def before_after(args, python: str, slug: str = "scaled-dot-product-attention") -> None:
    """(f) The pool's p50 on the code at ``args.before`` and on this tree, in one run."""
    import json
    import tempfile

    from grader import exercise

    folder = ROOT / "fixtures" / "bank" / slug
    forbid_job = {**exercise.load(folder), "code": (folder / "solution.py").read_text()}
    forbid_job.pop("wrong", None)
    print(f"pool p50, {args.before} vs this tree: {args.rounds} rounds of {args.n} per job\n")
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        git = ["git", "-C", str(ROOT), "worktree"]
        subprocess.run([*git, "add", "--detach", str(before), args.before], check=True)
        try:
            trees = [("before", before), ("after", ROOT)]
            for round_ in range(args.rounds):
                for label, tree in trees if round_ % 2 == 0 else trees[::-1]:
                    out = subprocess.run(
                        [sys.executable, "-c", _POOL_TIMES, str(tree), python, str(args.n)]
                        + [json.dumps(JOB), json.dumps(forbid_job)],
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                    for name, seconds in json.loads(out.stdout).items():
                        times.setdefault((label, name), []).extend(seconds)
        finally:
            subprocess.run([*git, "remove", "--force", str(before)], check=False)
    for name in ("plain", "forbid"):
        b = stats(f"{args.before}: {name}", times[("before", name)])
        a = stats(f"this tree: {name}", times[("after", name)])
        print(f"{'':<38} after/before p50: {a / b:.2f}x (goal <= 1.2x)\n")


# (g): run in a child process whose grader package is REF's or the working tree's.
_SIDE = """
import json, sys, time
from pathlib import Path
from grader import SandboxPool, exercise
python, folder, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
job = exercise.load(folder)
right = {**job, "code": (folder / "solution.py").read_text()}
wrong = {**job, "code": sorted(job["wrong"].values())[0]}
out = {"passed": [], "failed": []}
with SandboxPool(python, slots=1) as pool:
    pool.grade(right)
    for _ in range(n):
        for name, one in (("passed", right), ("failed", wrong)):
            t0 = time.perf_counter()
            result = pool.grade(one)
            assert result["status"] == name, result["status"]
            out[name].append(time.perf_counter() - t0)
print(json.dumps(out))
"""


def submit_before_after(args, python: str) -> None:
    """(g): the same exercise (taken from REF, so both graders can read it) through REF's grader
    package and the working tree's, in alternating rounds of ``-n`` submits of each kind; every
    round starts a fresh pool, so the per-run seed's first reference run is inside the timings,
    as it is for a learner after each rotation."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        before = Path(scratch) / "before"
        before.mkdir()
        archive = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "archive",
                args.before_after,
                "grader",
                f"fixtures/bank/{args.slug}",
            ],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        folder = before / "fixtures" / "bank" / args.slug
        times: dict[str, dict[str, list[float]]] = {
            side: {"passed": [], "failed": []} for side in ("before", "after")
        }
        for _ in range(args.rounds):
            for side, root in (("before", before), ("after", ROOT)):
                env = {**os.environ, "PYTHONPATH": str(root)}
                done = subprocess.run(
                    [sys.executable, "-c", _SIDE, python, str(folder), str(args.n)],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=root,
                )
                for kind, seconds in json.loads(done.stdout.strip().splitlines()[-1]).items():
                    times[side][kind].extend(seconds)
    print(
        f"(g) {args.slug}: {args.rounds} rounds x {args.n} submits each, "
        f"{args.before_after} vs the working tree"
    )
    for kind in ("passed", "failed"):
        old = stats(f"(g) before, {kind} submit", times["before"][kind])
        new = stats(f"(g) after, {kind} submit", times["after"][kind])
        print(f"(g) {kind}: after/before p50 = {new / old:.2f}x (target <= 1.5x)")


def examples_vs_submit(pool, count: int, slug: str = "attention-from-scratch") -> None:
    from grader import exercise

    folder = ROOT / "fixtures" / "bank" / slug
    job = exercise.load(folder)
    solution = (folder / "solution.py").read_text(encoding="utf-8")
    wrong = next(iter(sorted(job["wrong"].values())))
    full = {**job, "code": solution}
    examples = {**full, "checks": [c for c in job["checks"] if c.get("visible")]}
    pool.grade(full), pool.grade(examples), pool.grade({**job, "code": wrong})  # warm the caches
    runs: dict[str, list[float]] = {"examples": [], "submit": [], "diagnosed": []}
    for _ in range(count):  # interleaved, so both see the same machine
        runs["examples"].append(timed(lambda: pool.grade(examples)))
        runs["submit"].append(timed(lambda: pool.grade(full)))
        runs["diagnosed"].append(timed(lambda: pool.grade({**job, "code": wrong}), "failed"))
    print(f"\n{slug}: {len(examples['checks'])} visible of {len(job['checks'])} checks")
    e = stats("(d) run examples", runs["examples"])
    s = stats("(d) submit, all checks", runs["submit"])
    stats("(d) failing submit + diagnosis", runs["diagnosed"])
    print(f"(d) examples p50 is {s / e:.1f}x faster than a full submit")


def _site(args, python: str):
    """A scratch database with one exercise (the bench's), Django set up against it."""
    os.environ.update(
        DATABASE_URL=args.database_url,
        REDIS_URL=args.redis_url,
        ALLOWED_HOSTS="testserver",
        GRADER_PYTHON=python,
        SUBMISSION_RATE="100000/min",
        DJANGO_SETTINGS_MODULE="quizbank.settings",
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from quizbank.models import Exercise, Question, Topic

    sys.path.insert(0, str(ROOT / "bench"))
    from api import _recreate_database  # noqa: PLC0415 - sibling script
    from django.db import connections

    name = connection.settings_dict["NAME"]
    _recreate_database(connections, name)
    call_command("migrate", verbosity=0)
    topic = Topic.objects.create(slug="bench", name="Bench")
    question = Question.objects.create(
        slug="scale",
        title="Scale",
        prompt=".",
        answer=".",
        why_asked=".",
        difficulty="easy",
        kind="code",
        status="published",
        primary_topic=topic,
    )
    exercise = Exercise.objects.create(
        question=question, starter_code=SOLUTION, solution_code=SOLUTION, checks=CHECKS
    )
    # Learners are graded against the live (verified) version only: as load_bank makes it.
    exercise.version_create(verified=True)
    return name


def _worker(slots: int, **env: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "quizbank", "worker", "-Q", "cpu"]
    command += ["-P", "threads", "-c", str(slots), "--without-gossip", "--without-mingle"]
    return subprocess.Popen(
        [*command, "-l", "warning"],
        cwd=ROOT,
        env={**os.environ, "GRADER_SLOTS": str(slots), **env},
        start_new_session=True,
    )


def end_to_end(args, python: str) -> tuple[float, float]:
    name = _site(args, python)
    from django.db import connection
    from django.test import Client

    from practice.models import Submission

    sys.path.insert(0, str(ROOT / "bench"))
    from api import _drop_database  # noqa: PLC0415 - sibling script
    from django.conf import settings
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("bench", password="bench-password-123")
    client = Client()
    client.force_login(user)

    # One learner's burst measures throughput here, so no per-learner cap: (e) measures that.
    settings.GRADER_USER_IN_FLIGHT = 0
    worker = _worker(args.slots, GRADER_USER_IN_FLIGHT="0")
    try:

        def post_and_wait() -> dict:
            response = client.post(
                "/api/submissions/",
                {"question": "scale", "code": SOLUTION},
                content_type="application/json",
            )
            pk = response.json()["id"]
            while True:
                status = Submission.objects.values_list("status", flat=True).get(pk=pk)
                if status not in ("queued", "running"):
                    return {"status": status}
                time.sleep(0.002)

        for _ in range(3):  # the worker starts its zygotes on the first submission
            post_and_wait()
        c = stats(
            "(c) POST -> verdict via Redis + Celery", [timed(post_and_wait) for _ in range(args.n)]
        )

        t0 = time.perf_counter()
        ids = [
            client.post(
                "/api/submissions/",
                {"question": "scale", "code": SOLUTION},
                content_type="application/json",
            ).json()["id"]
            for _ in range(args.burst)
        ]
        while Submission.objects.filter(pk__in=ids, status__in=["queued", "running"]).exists():
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        passed = Submission.objects.filter(pk__in=ids, status="passed").count()
        rate = args.burst / elapsed
        print(
            f"{'(c) end to end, burst':<38} {args.burst} verdicts ({passed} passed) "
            f"in {elapsed:.2f} s = {rate:.1f} verdicts/s"
        )
        return c, rate
    finally:
        os.killpg(worker.pid, 9)
        worker.wait()
        connection.close()
        _drop_database(name)


SLEEPER = "import time\ntime.sleep(600)\n\n" + SOLUTION


def fairness(args, python: str) -> None:
    """(e): a slow learner's backlog and other learners' correct code, before and after."""
    name = _site(args, python)
    import threading

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from grader import limits
    from practice.models import Submission
    from quizbank.models import Exercise

    sys.path.insert(0, str(ROOT / "bench"))
    from api import _drop_database  # noqa: PLC0415 - sibling script

    users = get_user_model().objects
    cores = os.cpu_count() or 1
    exercise = Exercise.objects.get()
    print(
        f"\n(e) fairness: 1 learner posts {args.slow} submissions that sleep, then "
        f"{args.others} learners post {args.each} correct ones each, one every {args.gap:g} s"
    )

    def phase(label: str, *, slots: int, cap: int, fitted: bool) -> None:
        settings.GRADER_USER_IN_FLIGHT = cap  # this process dispatches; the worker releases
        # "before": the flat limit every exercise had (a measurement that fits to the ceiling)
        measured = None if fitted else exercise.time_limit / limits.TIME_LIMIT_FACTOR
        digest = exercise.content_digest if measured else ""
        Exercise.objects.update(reference_seconds=measured, reference_digest=digest)
        worker = _worker(slots, GRADER_USER_IN_FLIGHT=str(cap))
        clients: dict[str, Client] = {}

        def client_for(username: str) -> Client:
            if username not in clients:
                clients[username] = Client()
                user = users.get_or_create(username=f"{label}-{username}")[0]
                clients[username].force_login(user)
            return clients[username]

        def post(username: str, code: str) -> int:
            response = client_for(username).post(
                "/api/submissions/", {"question": "scale", "code": code}, "application/json"
            )
            assert response.status_code == 201, response.content
            return response.json()["id"]

        def wait(ids: list[int]) -> None:
            while Submission.objects.filter(pk__in=ids, status__in=["queued", "running"]).exists():
                time.sleep(0.02)

        def run(posts: list[tuple[str, str, float]]) -> tuple[dict[int, float], float]:
            """POST each (learner, code, pause after), then wait for every verdict; returns each
            submission's POST -> verdict seconds and the time from the first POST to the last."""
            posted: dict[int, float] = {}
            done: dict[int, float] = {}
            stop = threading.Event()

            def watch() -> None:
                while not stop.is_set():
                    pending = [pk for pk in list(posted) if pk not in done]
                    finished = Submission.objects.filter(pk__in=pending).exclude(
                        status__in=["queued", "running"]
                    )
                    now = time.perf_counter()
                    for pk in finished.values_list("pk", flat=True):
                        done[pk] = now
                    time.sleep(0.01)
                connection.close()

            watcher = threading.Thread(target=watch)
            watcher.start()
            t0 = time.perf_counter()
            for username, code, pause in posts:
                pk = post(username, code)
                posted[pk] = time.perf_counter()
                time.sleep(pause)
            while len(done) < len(posted) and time.perf_counter() - t0 < 900:
                time.sleep(0.05)
            stop.set()
            watcher.join()
            return {pk: done[pk] - posted[pk] for pk in done}, max(done.values()) - t0

        try:
            wait([post("warm", SOLUTION) for _ in range(3)])  # zygotes; "after": measures
            exercise.refresh_from_db()
            limit = exercise.fitted_time_limit
            print(
                f"{label}: {slots} slots on {cores} cores, per-learner cap {cap or 'none'}, "
                f"time limit {limit:g} s"
            )
            backlog = [("slow", SLEEPER, 0.0)] * args.slow
            others = [
                (f"user{i % args.others}", SOLUTION, args.gap)
                for i in range(args.others * args.each)
            ]
            latency, _ = run(backlog + others)
            ids = sorted(latency)
            slow_ids, other_ids = ids[: args.slow], ids[args.slow :]
            statuses = Submission.objects.filter(pk__in=other_ids).values_list("status", flat=True)
            assert set(statuses) == {"passed"}, set(statuses)
            seconds = sorted(latency[i] for i in other_ids)
            stats(f"(e) {label}: others, POST -> verdict", seconds)
            stats(f"(e) {label}: slow learner's", [latency[i] for i in slow_ids])
            p95[label] = seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))]

            # The fault run's mix: many learners at once, one submission in ten sleeping.
            count = args.mixed_users * args.mixed_each
            learners = args.mixed_users
            # Round k: learner number k (mod 10) posts code that sleeps, so the sleepers are
            # spread over the learners as in the fault run, never one learner's backlog.
            sleeps = [(i // learners) % 10 == (i % learners) % 10 for i in range(count)]
            mixed = [
                (f"mixed{i % learners}", SLEEPER if sleeps[i] else SOLUTION, 0.0)
                for i in range(count)
            ]
            latency, drain = run(mixed)
            ids = sorted(latency)
            print(
                f"(e) {label}: {count} mixed from {args.mixed_users} learners "
                f"({sum(sleeps)} sleeping) drained in {drain:.1f} s = "
                f"{count / drain:.1f} verdicts/s"
            )
            stats(f"(e) {label}: mixed, all", list(latency.values()))
            correct = [latency[pk] for pk, slow in zip(ids, sleeps, strict=True) if not slow]
            stats(f"(e) {label}: mixed, the correct ones", correct)
        finally:
            os.killpg(worker.pid, 9)
            worker.wait()
            Submission.objects.filter(status__in=["queued", "running"]).update(status="error")

    p95: dict[str, float] = {}
    try:
        phase("before", slots=cores, cap=0, fitted=False)
        phase("after", slots=settings.GRADER_SLOTS, cap=1, fitted=True)
        print(
            f"(e) others' p95: {p95['before']:.2f} s before, {p95['after']:.2f} s after "
            f"({p95['before'] / p95['after']:.0f}x; target under 2 s)"
        )
    finally:
        connection.close()
        _drop_database(name)


if __name__ == "__main__":
    main()
