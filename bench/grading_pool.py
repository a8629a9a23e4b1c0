"""Grading latency and throughput: a cold process per submission vs the warm zygote pool.

    .venv/bin/python bench/grading_pool.py [--cold 8] [--warm 60] [--slots 2]

Both sides grade the same small exercise (one linear layer, an SGD step, five checks) through the
real sandbox with every isolation layer on. (a) "cold": each submission runs in a fresh
single-use interpreter that imports torch (the GPU slot's path, with prespawning off). (b) "pool":
each submission runs in a child forked from a zygote that imported and warmed torch once. Each
side is measured alone (the two would otherwise compete for the same cores): first sequentially
for latency (p50/p95), then with ``slots`` submissions in flight for throughput. The reference's
outputs are cached by both after one warm-up job, which is not counted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grader import SandboxPool  # noqa: E402

SOLUTION = '''
import torch


def sgd_step(model, x, y, lr):
    """One step of plain SGD on the mean squared error; returns the loss before the step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
'''

CHECK_SETUP = "model = nn.Linear(4, 2)\nx = torch.randn(8, 4)\ny = torch.randn(8, 2)\n"
JOB = {
    "code": SOLUTION,
    "reference": SOLUTION,
    "checks": [
        {"name": "returns the loss", "visible": True,
         "code": CHECK_SETUP + "out = sgd_step(model, x, y, 0.1)", "compare": "out"},
        {"name": "updates the weights",
         "code": CHECK_SETUP + "sgd_step(model, x, y, 0.1)", "compare": "model.weight"},
        {"name": "updates the bias",
         "code": CHECK_SETUP + "sgd_step(model, x, y, 0.1)", "compare": "model.bias"},
        {"name": "two steps lower the loss",
         "code": CHECK_SETUP + "a = sgd_step(model, x, y, 0.1)\nb = sgd_step(model, x, y, 0.1)",
         "compare": "b < a"},
        {"name": "zero learning rate changes nothing",
         "code": CHECK_SETUP + "w = model.weight.clone()\nsgd_step(model, x, y, 0.0)",
         "compare": "torch.equal(w, model.weight)"},
    ],
    "time_limit": 30,
}  # fmt: skip


VERDICTS = {
    "passed": SOLUTION,
    "failed": SOLUTION.replace("lr=lr", "lr=lr * 2"),
    "error": SOLUTION + "\nraise ImportError('no such module')\n",
    "out_of_memory": SOLUTION + "\nhog = bytearray(1 << 40)\n",
    "rejected": SOLUTION + "\nunused = torch.optim.Adam\n",
    "timed_out": SOLUTION + "\nwhile True:\n    pass\n",
}


def per_verdict(pool: SandboxPool, repeats: int) -> dict[str, float]:
    """Median latency through the pool for a submission ending in each status."""
    latencies = {}
    for status, code in VERDICTS.items():
        job = {**JOB, "code": code, "forbid": ["torch.optim.Adam"], "time_limit": 1}
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            result = pool.grade(job)
            times.append(time.perf_counter() - started)
            if result["status"] != status:
                raise SystemExit(f"expected {status}, got {result}")
        latencies[status] = statistics.median(times)
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(pool: SandboxPool, submissions: int, slots: int) -> dict[str, float]:
    def grade() -> float:
        started = time.perf_counter()
        result = pool.grade(JOB)
        if result["status"] != "passed":
            raise SystemExit(f"the benchmark exercise did not pass: {result}")
        return time.perf_counter() - started

    grade()  # caches the reference's outputs; not counted
    latencies = [grade() for _ in range(submissions)]
    started = time.perf_counter()
    with ThreadPoolExecutor(slots) as executor:
        list(executor.map(lambda _: grade(), range(submissions)))
    throughput = submissions / (time.perf_counter() - started)
    return {
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "throughput": throughput,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=8, help="submissions on the cold side")
    parser.add_argument("--warm", type=int, default=60, help="submissions on the pool side")
    parser.add_argument("--slots", type=int, default=2)
    default_python = REPO / ".venv-grader" / "bin" / "python"
    parser.add_argument("--python", default=os.environ.get("GRADER_PYTHON", default_python))
    args = parser.parse_args()

    with SandboxPool(args.python, slots=args.slots, kind="gpu", prespawn=False) as pool:
        cold = measure(pool, args.cold, args.slots)
    with SandboxPool(args.python, slots=args.slots, kind="cpu") as pool:
        warm = measure(pool, args.warm, args.slots)
        verdicts = per_verdict(pool, repeats=5)

    print(f"{os.cpu_count()} cores, {args.slots} slots, 5-check exercise, full isolation")
    print(f"{'':28}{'p50 ms':>9}{'p95 ms':>9}{'per s':>9}")
    for label, figures, n in (
        ("(a) cold process per run", cold, args.cold),
        ("(b) zygote pool", warm, args.warm),
    ):
        print(
            f"{label:28}{figures['p50'] * 1000:9.0f}{figures['p95'] * 1000:9.0f}"
            f"{figures['throughput']:9.2f}   (n={n})"
        )
    print(
        f"pool vs cold: {cold['p50'] / warm['p50']:.0f}x lower p50 latency, "
        f"{warm['throughput'] / cold['throughput']:.0f}x the throughput"
    )
    print("pool latency by verdict (median of 5; timed_out has a 1 s limit):")
    print("  " + ", ".join(f"{status} {t * 1000:.0f} ms" for status, t in verdicts.items()))


if __name__ == "__main__":
    main()
