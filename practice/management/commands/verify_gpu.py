"""`manage.py verify_gpu` (`make verify-gpu`): the GPU queue, end to end, on a machine with CUDA.

It has one real run at a time on a GPU machine, so it is built to say as much as it can from one:
it first proves CUDA works inside the sandbox (and prints what the sandboxed process holds), then
grades and runs everything side by side on several slots, printing each question as it finishes
(a run cut short by a time limit still shows what was done), with the output of every run that
went wrong.
"""

import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.core.management.base import BaseCommand, CommandError

from grader.limits import MAX_TIME_LIMIT
from practice import grader_client
from practice.grader_client import SandboxError, SandboxPool
from quizbank.bank.blocks import Block, python_blocks
from quizbank.models import Exercise, Question, Queue

# Tags a GPU machine still cannot run: the sandbox has no torchvision and no process groups.
STILL_SKIPPED = {"torchvision", "distributed", "norun"}
OUTPUT_TAIL = 1500  # characters of a failed run's output shown with its problem

# Run first, on one slot: what the sandboxed process holds (the CUDA driver's descriptors, its
# threads and whether each is under the filter and in the sandbox's root, the device nodes), then
# CUDA as the bank uses it, one property a block, so a failure names what broke.
SMOKE_BLOCKS = [
    """\
import os, socket
def _target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError as error:
        return type(error).__name__
print("descriptors:", {int(fd): _target(fd) for fd in sorted(os.listdir("/proc/self/fd"), key=int)})
root = sorted(os.listdir("/"))
for tid in sorted(os.listdir("/proc/self/task"), key=int):
    with open(f"/proc/self/task/{tid}/comm") as f:
        name = f.read().strip()
    with open(f"/proc/self/task/{tid}/status") as f:
        status = dict(line.rstrip("\\n").split(":\\t", 1) for line in f if ":\\t" in line)
    own_root = sorted(os.listdir(f"/proc/self/task/{tid}/root")) == root
    print(f"thread {tid} {name}: seccomp {status['Seccomp']}, no_new_privs "
          f"{status['NoNewPrivs']}, the sandbox's root {own_root}")
    assert own_root and status["Seccomp"] == "2", f"thread {name} is not isolated"
nodes = {n: oct(os.stat("/dev/" + n).st_mode) for n in sorted(os.listdir("/dev")) if "nvidia" in n}
print("device nodes:", nodes, "uid", os.getuid())
assert not os.path.exists("/home") and os.getpid() == 2
try:
    socket.socket()
    raise AssertionError("a socket was allowed")
except PermissionError:
    pass
""",
    """\
import torch
assert torch.cuda.is_available(), "torch sees no CUDA device inside the sandbox"
x = torch.randn(1024, 1024, device="cuda")
assert torch.allclose((x @ x).cpu(), x.cpu() @ x.cpu(), rtol=1e-3, atol=1e-2)
print("device:", torch.cuda.get_device_name(), torch.version.cuda)
""",
    """\
big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")  # new device memory, mapped now
big.fill_(7)
assert int(big[-1]) == 7
del big
torch.cuda.empty_cache()
""",
    """\
pinned = torch.ones(1 << 20).pin_memory()  # page-locked host memory, allocated now
assert pinned.to("cuda", non_blocking=True).sum().item() == 1 << 20
""",
    """\
import torch.nn.functional as F
image, kernel = torch.randn(2, 3, 16, 16, device="cuda"), torch.randn(4, 3, 3, 3, device="cuda")
assert torch.allclose(F.conv2d(image, kernel).cpu(), F.conv2d(image.cpu(), kernel.cpu()),
                      atol=1e-3)  # cuDNN, loaded now
with torch.autocast("cuda", dtype=torch.float16):
    assert (x @ x).dtype == torch.float16  # cuBLASLt
torch.cuda.synchronize()
print("memory:", torch.cuda.memory_allocated(), "allocated,", torch.cuda.memory_reserved(),
      "reserved")
""",
]


@dataclass
class Task:
    slug: str
    exercise: Exercise | None = None  # grade it (a GPU-queue exercise)
    blocks: list[Block] = field(default_factory=list)  # or run these (an answer's blocks)


def start_pools(count: int) -> list[SandboxPool]:
    """``count`` one-slot GPU pools, started side by side. One slot each, so that one zygote
    grades an exercise from start to end: the reference's outputs and the wrong solutions' are
    cached per zygote, and every run of a GPU slot is a fresh process (seconds to start)."""

    def start(_: int) -> SandboxPool:
        return grader_client.gpu_pool_start()

    with ThreadPoolExecutor(count) as executor:
        futures = [executor.submit(start, i) for i in range(count)]
    pools, errors = [], []
    for future in futures:
        try:
            pools.append(future.result())
        except (SandboxError, OSError) as error:
            errors.append(error)
    if errors:
        for pool in pools:
            pool.close()
        raise errors[0]
    return pools


class Command(BaseCommand):
    help = (
        "On a machine with a CUDA device: grade every GPU-queue exercise (reference, starter, "
        "wrong solutions) and run every answer with `python cuda` blocks through the GPU queue's "
        "single-use slots, with nothing skipped for want of CUDA. Prints what it ran; exits 1 on "
        "a problem, and 2 when no CUDA device is present."
    )

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Only these questions (default: all).")
        parser.add_argument(
            "--slots",
            type=int,
            default=4,
            help="GPU slots run side by side, each a zygote with its own single-use processes "
            "(default 4; every run starts a fresh interpreter, so this is what makes it fast).",
        )
        parser.add_argument(
            "--without-cuda",
            action="store_true",
            help="A dry run where there is no CUDA: the same path on the CPU, with checks that "
            "need CUDA skipped and CUDA blocks left out (to test this command, not the GPU).",
        )

    def handle(self, *args, slugs, slots, without_cuda, **options):
        started = time.monotonic()
        if slots < 1:
            raise CommandError("--slots must be at least 1")
        tasks = self.tasks(slugs, without_cuda)  # the database is read here, in this thread
        pools: list[SandboxPool] = []
        try:
            pools += start_pools(1)  # alone first: without CUDA, the answer comes in seconds
            if (without_cuda or pools[0].cuda) and slots > 1:
                pools += start_pools(slots - 1)
        except (SandboxError, OSError) as error:
            for pool in pools:
                pool.close()
            self.stderr.write(f"verify_gpu: the GPU queue's grader did not start: {error}")
            sys.exit(1)
        try:
            status = self.verify(pools, tasks, without_cuda, started)
        finally:
            for pool in pools:
                pool.close()
        if status:
            sys.exit(status)

    def tasks(self, slugs: list[str], without_cuda: bool) -> list[Task]:
        questions = Question.objects.select_related("exercise").exclude(
            status=Question.Status.ARCHIVED
        )
        if slugs:
            questions = questions.filter(slug__in=slugs)
        exercises, answers = [], []
        for question in questions.order_by("slug"):
            exercise = getattr(question, "exercise", None)
            if exercise is not None and exercise.queue == Queue.GPU:
                exercises.append(Task(question.slug, exercise=exercise))
            runnable = [b for b in python_blocks(question.answer) if not b.tags & STILL_SKIPPED]
            if not any("cuda" in b.tags for b in runnable):
                continue
            if without_cuda:
                runnable = [b for b in runnable if "cuda" not in b.tags]
            if runnable:
                answers.append(Task(question.slug, blocks=runnable))
        return exercises + answers  # the long ones first

    def verify(
        self, pools: list[SandboxPool], tasks: list[Task], without_cuda: bool, started: float
    ) -> int:
        if not without_cuda and not all(pool.cuda for pool in pools):
            reasons = dict.fromkeys(pool.cuda_detail for pool in pools if not pool.cuda)
            detail = "; ".join(reason for reason in reasons if reason) or "no reason given"
            self.stderr.write(
                f"verify_gpu: no CUDA device for the grader's runs: {detail}. Run this on a "
                "machine with an NVIDIA GPU, a CUDA build of torch in the grader's interpreter "
                "(GRADER_PYTHON) and GRADER_GPU_DEVICES=auto."
            )
            return 2
        where = "the CPU (--without-cuda)" if without_cuda else "CUDA"
        self.stdout.write(
            f"verify_gpu: {pools[0].cuda_detail}; {len(pools)} slot(s); isolation layers "
            f"{dict(sorted(pools[0].layers.items()))}"
        )
        if not without_cuda:
            broken = self.smoke(pools[0])
            if broken:
                for problem in broken:
                    self.stderr.write(problem)
                log = pools[0].log_tail()
                if log:
                    self.stderr.write(f"verify_gpu: the grader's log:\n{log}")
                self.stderr.write(
                    "verify_gpu: CUDA does not work inside the sandbox; nothing else was run."
                )
                return 1
        work: queue.SimpleQueue[Task] = queue.SimpleQueue()
        for task in tasks:
            work.put(task)
        lock = threading.Lock()
        problems: list[str] = []
        counts = {"exercises": 0, "blocks": 0}

        def worker(pool: SandboxPool) -> None:
            while True:
                try:
                    task = work.get_nowait()
                except queue.Empty:
                    return
                begun = time.monotonic()
                if task.exercise is not None:
                    line, found = self.grade(pool, task.slug, task.exercise, without_cuda)
                    counted = ("exercises", 1)
                else:
                    line, found = self.run_blocks(pool, task.slug, task.blocks)
                    counted = ("blocks", len(task.blocks))
                with lock:
                    counts[counted[0]] += counted[1]
                    problems.extend(found)
                    self.stdout.write(f"{line} ({time.monotonic() - begun:.0f} s)")
                    for problem in found:
                        self.stderr.write(problem)
                    self.stdout.flush()

        with ThreadPoolExecutor(len(pools)) as executor:
            list(executor.map(worker, pools))
        self.stdout.write(
            f"verify_gpu: {counts['exercises']} GPU-queue exercise(s) graded on {where}, "
            f"{counts['blocks']} code block(s) of answers with CUDA blocks run on {where}; "
            f"{len(problems)} problem(s); {time.monotonic() - started:.0f} s"
        )
        return 1 if problems else 0

    def smoke(self, pool: SandboxPool) -> list[str]:
        result = pool.run_snippets(SMOKE_BLOCKS, MAX_TIME_LIMIT)
        self.stdout.write(f"verify_gpu: inside the sandbox:\n{result.get('output', '').strip()}")
        if result.get("status") == "passed":
            return []
        return [
            f"verify_gpu: CUDA in the sandbox, block {b['index'] + 1}: {b.get('message')}"
            for b in result.get("blocks", [])
            if b.get("status") == "failed"
        ] or [f"verify_gpu: CUDA in the sandbox: {result.get('message', result.get('status'))}"]

    def grade(
        self, pool: SandboxPool, slug: str, exercise: Exercise, without_cuda: bool
    ) -> tuple[str, list[str]]:
        verdicts = grader_client.exercise_verify(exercise, pool=pool)
        skipped = [
            f"{v.result['skipped']} check(s) skipped"
            for v in verdicts
            if v.result.get("skipped") and not without_cuda
        ]
        problems = []
        for found in verdicts:
            problem = found.problem()
            if problem is not None:
                problems.append(f"{slug}: {problem}{_tail(found.result.get('output', ''))}")
        problems += [f"{slug}: {s} on a CUDA machine" for s in sorted(set(skipped))]
        return f"{slug}: exercise, {len(verdicts)} file(s) graded on the GPU queue", problems

    def run_blocks(
        self, pool: SandboxPool, slug: str, blocks: list[Block]
    ) -> tuple[str, list[str]]:
        run = grader_client.answer_blocks_run(blocks, pool=pool)
        problems = [f"{slug}: {problem}" for problem in run.problems]
        if problems:
            problems[-1] += _tail(run.output)
        cuda = sum("cuda" in b.tags for b in blocks)
        return f"{slug}: {len(blocks)} block(s) run, {cuda} of them CUDA", problems


def _tail(output: str) -> str:
    """The end of a run's output, to read under its problem (empty if it printed nothing)."""
    output = output.strip()
    if len(output) > OUTPUT_TAIL:
        output = "..." + output[-OUTPUT_TAIL:]
    return f"\n    output: {output}" if output else ""
