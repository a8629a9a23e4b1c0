import sys

from django.core.management.base import BaseCommand

from grader import SandboxError, verification
from grader.limits import MAX_TIME_LIMIT
from practice import grader_client
from quizbank.bank.blocks import python_blocks
from quizbank.models import Exercise, Question, Queue

# Tags a GPU machine still cannot run: the sandbox has no torchvision and no process groups.
STILL_SKIPPED = {"torchvision", "distributed", "norun"}


class Command(BaseCommand):
    help = (
        "On a machine with a CUDA device: grade every GPU-queue exercise (reference, starter, "
        "wrong solutions) and run every answer with `python cuda` blocks through the GPU queue's "
        "single-use slots, with nothing skipped for want of CUDA. Prints what it ran; exits 1 on "
        "a problem, and 2 when no CUDA device is present."
    )

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Only these questions (default: all).")

    def handle(self, *args, slugs, **options):
        try:
            pool = grader_client.sandbox_pool("gpu")
        except (SandboxError, OSError) as error:
            self.stderr.write(f"verify_gpu: the GPU queue's grader did not start: {error}")
            sys.exit(1)
        if not pool.cuda:
            # What a single-use process of the pool found when it initialised CUDA.
            detail = pool.cuda_detail or "no reason given"
            grader_client.close_pools()
            self.stderr.write(
                f"verify_gpu: no CUDA device for the grader's runs: {detail}. Run this on a "
                "machine with an NVIDIA GPU, a CUDA build of torch in the grader's interpreter "
                "(GRADER_PYTHON) and GRADER_GPU_DEVICES=auto."
            )
            sys.exit(2)
        questions = Question.objects.select_related("exercise").exclude(
            status=Question.Status.ARCHIVED
        )
        if slugs:
            questions = questions.filter(slug__in=slugs)
        problems: list[str] = []
        exercises = blocks = 0
        for question in questions:
            exercise = getattr(question, "exercise", None)
            if exercise is not None and exercise.queue == Queue.GPU:
                problems += self.grade(question.slug, exercise)
                exercises += 1
            ran, found = self.run_cuda_blocks(question, pool)
            blocks += ran
            problems += found
        grader_client.close_pools()
        for problem in problems:
            self.stderr.write(problem)
        self.stdout.write(
            f"verify_gpu: {exercises} GPU-queue exercise(s) graded on CUDA, {blocks} code "
            f"block(s) of answers with CUDA blocks run on CUDA; {len(problems)} problem(s)"
        )
        if problems:
            sys.exit(1)

    def grade(self, slug: str, exercise: Exercise) -> list[str]:
        files = verification.exercise_files(
            solution=exercise.solution_code,
            starter=exercise.starter_code,
            wrong=exercise.wrong_solutions,
        )
        skipped: list[str] = []

        def grade(code: str):
            verdict = grader_client.grade(exercise, code)
            if verdict.get("skipped"):
                skipped.append(f"{verdict['skipped']} check(s) skipped")
            return verdict

        verdicts = verification.verify_exercise(grade, files)
        problems = [f"{slug}: {p}" for v in verdicts if (p := v.problem()) is not None]
        problems += [f"{slug}: {s} on a CUDA machine" for s in sorted(set(skipped))]
        self.stdout.write(f"{slug}: exercise, {len(verdicts)} file(s) graded on the GPU queue")
        return problems

    def run_cuda_blocks(self, question: Question, pool) -> tuple[int, list[str]]:
        all_blocks = python_blocks(question.answer)
        if not any("cuda" in b.tags for b in all_blocks):
            return 0, []
        runnable = [b for b in all_blocks if not b.tags & STILL_SKIPPED]
        # The grader's own cap (jobs.normalize_snippets refuses more): one limit, one place.
        result = pool.run_snippets([b.code for b in runnable], MAX_TIME_LIMIT)
        problems = []
        for block, block_result in zip(runnable, result.get("blocks", []), strict=False):
            if block_result.get("status") != "passed":
                problems.append(
                    f"{question.slug}: answer.md line {block.line}: "
                    f"{block_result.get('message', block_result.get('status'))}"
                )
        cuda = sum("cuda" in b.tags for b in runnable)
        self.stdout.write(f"{question.slug}: {len(runnable)} block(s) run, {cuda} of them CUDA")
        return len(runnable), problems
