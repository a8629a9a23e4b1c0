import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings
from django.core.management.base import BaseCommand

from grader import verification
from grader.limits import MAX_TIME_LIMIT
from practice import grader_client
from quizbank.bank.blocks import python_blocks
from quizbank.bank.standard import standard_problems
from quizbank.models import Question


@dataclass
class Outcome:
    slug: str
    problems: list[str] = field(default_factory=list)
    blocks_run: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    graded: int = 0


class Command(BaseCommand):
    help = (
        "Prove the bank in the database behaves: every answer's code blocks run, every exercise's "
        "reference passes and its starter and wrong solutions fail, and the standard's counts hold."
    )

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Only these questions (default: all).")

    def handle(self, *args, slugs, **options):
        questions = Question.objects.select_related("exercise").prefetch_related(
            "hints", "quick_checks", "applications"
        )
        if slugs:
            questions = questions.filter(slug__in=slugs)
        questions = list(questions.exclude(status=Question.Status.ARCHIVED))
        with ThreadPoolExecutor(max_workers=settings.GRADER_SLOTS) as executor:
            outcomes = list(executor.map(self.verify, questions))
        failed = [o for o in outcomes if o.problems]
        for outcome in failed:
            for problem in outcome.problems:
                self.stderr.write(f"{outcome.slug}: {problem}")
        skipped: dict[str, int] = {}
        for outcome in outcomes:
            for reason, count in outcome.skipped.items():
                skipped[reason] = skipped.get(reason, 0) + count
        skipped_text = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items())) or "none"
        self.stdout.write(
            f"verify_bank: {len(outcomes)} questions, {sum(o.blocks_run for o in outcomes)} code "
            f"blocks run, skipped blocks: {skipped_text}; {sum(o.graded for o in outcomes)} "
            f"submissions graded; {len(failed)} question(s) with problems"
        )
        grader_client.close_pools()
        if failed:
            sys.exit(1)

    def verify(self, question: Question) -> Outcome:
        outcome = Outcome(slug=question.slug)
        outcome.problems += standard_problems(question)
        self.run_answer(question, outcome)
        exercise = getattr(question, "exercise", None)
        if exercise is not None:
            self.grade_exercise(exercise, outcome)
        return outcome

    def run_answer(self, question: Question, outcome: Outcome) -> None:
        runnable = []
        for block in python_blocks(question.answer):
            if block.sandbox_problem:
                outcome.problems.append(f"answer.md line {block.line}: {block.sandbox_problem}")
            if block.skip_reason:
                outcome.skipped[block.skip_reason] = outcome.skipped.get(block.skip_reason, 0) + 1
            else:
                runnable.append(block)
        if not runnable:
            return
        result = grader_client.sandbox_pool("cpu").run_snippets(
            [b.code for b in runnable], MAX_TIME_LIMIT
        )
        for block, block_result in zip(runnable, result.get("blocks", []), strict=False):
            if block_result.get("status") == "passed":
                outcome.blocks_run += 1
            elif block_result.get("status") != "skipped":
                outcome.problems.append(
                    f"answer.md line {block.line}: {block_result.get('message', 'failed')}"
                )
        if result.get("status") != "passed" and not outcome.problems:
            outcome.problems.append(f"answer.md: {result.get('message', result.get('status'))}")

    def grade_exercise(self, exercise, outcome: Outcome) -> None:
        files = verification.exercise_files(
            solution=exercise.solution_code,
            starter=exercise.starter_code,
            wrong=exercise.wrong_solutions,
        )
        verdicts = verification.verify_exercise(
            lambda code: grader_client.grade(exercise, code), files
        )
        outcome.graded += len(verdicts)
        outcome.problems += [p for v in verdicts if (p := v.problem()) is not None]
