import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from grader import mutation, probes
from practice import grader_client
from quizbank.bank.blocks import python_blocks
from quizbank.bank.standard import standard_problems
from quizbank.models import Exercise, Question


@dataclass
class Outcome:
    slug: str
    problems: list[str] = field(default_factory=list)
    blocks_run: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    graded: int = 0
    mutants: mutation.Score | None = None
    mutant_ids: set[str] = field(default_factory=set)
    notices: list[str] = field(default_factory=list)  # said, but not failures
    measured: dict[str, Any] | None = None  # a full grade's result, to record its reference time


class Command(BaseCommand):
    help = (
        "Prove the bank in the database behaves: every answer's code blocks run, every exercise's "
        "reference passes and its starter and wrong solutions fail, and the standard's counts hold."
    )

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Only these questions (default: all).")
        parser.add_argument(
            "--no-mutants", action="store_true", help="Skip mutation testing of the exercises."
        )
        parser.add_argument(
            "--baseline",
            type=Path,
            default=None,
            help="The ratchet's list of known survivors (default: "
            f"fixtures/bank/{mutation.BASELINE_NAME}).",
        )
        parser.add_argument(
            "--probe-baseline",
            type=Path,
            default=None,
            help="The exercises known to fail the equivalence probe (default: "
            f"fixtures/bank/{probes.BASELINE_NAME}).",
        )
        parser.add_argument(
            "--mutant-cache",
            type=Path,
            default=None,
            help="Where kills are cached by content hash (default: .cache/mutants; 'none': no "
            "cache).",
        )
        parser.add_argument(
            "--ledger",
            type=Path,
            default=None,
            help=f"The committed kills a clean clone starts from (default: fixtures/bank/"
            f"{mutation.LEDGER_NAME}; 'none': grade every mutant).",
        )
        parser.add_argument(
            "--ledger-sample",
            type=float,
            default=0.1,
            help="The fraction of the ledger's kills graded again anyway (default 0.1).",
        )
        parser.add_argument(
            "--ledger-seed",
            default=None,
            help="Chooses the sample (default: today's date, so the sample rotates by day).",
        )
        parser.add_argument(
            "--write-ledger",
            action="store_true",
            help="Write this run's kills into the ledger (the whole file after a run over the "
            "whole bank; added to it after a partial run).",
        )
        parser.add_argument(
            "--write-baseline",
            action="store_true",
            help="Write the survivors of the exercises run into the baseline (replacing their "
            "lines) instead of failing on them; the diff is for review.",
        )

    def handle(
        self,
        *args,
        slugs,
        no_mutants,
        baseline,
        probe_baseline,
        mutant_cache,
        write_baseline,
        ledger,
        ledger_sample,
        ledger_seed,
        write_ledger,
        **options,
    ):
        bank = Path(settings.BASE_DIR) / "fixtures" / "bank"
        self.baseline_path = baseline or bank / mutation.BASELINE_NAME
        self.probe_known = probes.read_baseline(probe_baseline or bank / probes.BASELINE_NAME)
        if mutant_cache is None:
            mutant_cache = Path(settings.BASE_DIR) / ".cache" / "mutants"
        self.mutants = not no_mutants
        if not 0 <= ledger_sample <= 1:
            raise CommandError(f"--ledger-sample: {ledger_sample} is not between 0 and 1")
        if ledger is None:
            ledger = bank / mutation.LEDGER_NAME
        self.cache = mutation.KillLedger(
            None if str(mutant_cache) == "none" else mutant_cache,
            None if str(ledger) == "none" else ledger,
            sample=ledger_sample,
            seed=ledger_seed if ledger_seed is not None else date.today().isoformat(),
        )
        questions = Question.objects.select_related("exercise").prefetch_related(
            "hints", "quick_checks", "applications"
        )
        if slugs:
            questions = questions.filter(slug__in=slugs)
        with ThreadPoolExecutor(max_workers=settings.GRADER_SLOTS) as executor:
            outcomes = list(
                executor.map(self.verify, list(questions.exclude(status=Question.Status.ARCHIVED)))
            )
        scores = [o.mutants for o in outcomes if o.mutants is not None]
        for score in scores:
            self.stdout.write(score.line())
        if scores and self.cache.ledger is not None:
            self.stdout.write(
                f"ledger: {self.cache.from_ledger} kills taken from {self.cache.ledger.name}, "
                f"{self.cache.sampled} of its kills graded again as the sample"
            )
        if scores:
            known = mutation.read_baseline(self.baseline_path)
            ran = {s.slug for s in scores}
            if write_baseline:
                kept = {(slug, m) for slug, m in known if slug not in ran}
                survivors = {(s.slug, m) for s in scores for m in s.survived}
                self.baseline_path.write_text(
                    mutation.format_baseline(kept | survivors), encoding="utf-8"
                )
                self.stdout.write(
                    f"wrote {len(kept | survivors)} survivors to {self.baseline_path}"
                )
            else:
                ids = {o.slug: o.mutant_ids for o in outcomes}
                ratchet = mutation.ratchet_problems(scores, known, all_mutants=ids)
                for outcome in outcomes:
                    outcome.problems += ratchet.get(outcome.slug, [])
        # Written here, not in the grading threads: a thread's write is a connection of its own,
        # outside the caller's transaction (a test's), and on SQLite it waits on that lock.
        # A fresh row: the threads' copies already hold the measurement in memory.
        for question, outcome in zip(questions, outcomes, strict=True):
            if outcome.measured is not None:
                fresh = Exercise.objects.get(pk=question.exercise.pk)
                grader_client.record_measurement(fresh, outcome.measured)
        failed = [o for o in outcomes if o.problems]
        for outcome in outcomes:
            for notice in outcome.notices:
                self.stdout.write(f"{outcome.slug}: {notice}")
        # Kills are facts about content whatever else failed, so the ledger is written anyway.
        if write_ledger and self.cache.ledger is not None:
            written = self.cache.write(replace=not slugs)
            self.stdout.write(f"wrote {written} kills to {self.cache.ledger}")
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
        run = grader_client.answer_blocks_run(runnable)
        outcome.blocks_run += run.passed
        outcome.problems += run.problems

    def grade_exercise(self, exercise, outcome: Outcome) -> None:
        verdicts = grader_client.exercise_verify(exercise, measure=False)
        outcome.measured = next((v.result for v in verdicts if v.result.get("reference_ms")), None)
        if outcome.measured is not None and not (
            exercise.reference_digest == exercise.content_digest
            and exercise.reference_seconds is not None
        ):
            # In memory only (the write is the main thread's): the mutants' jobs below get the
            # limit fitted to it, as a later run reading it from the database does.
            exercise.reference_seconds = outcome.measured["reference_ms"] / 1000
            exercise.reference_digest = exercise.content_digest
        outcome.graded += len(verdicts)
        outcome.problems += [p for v in verdicts if (p := v.problem()) is not None]
        if not outcome.problems:
            probe = grader_client.rng_probe(exercise)
            outcome.graded += 1
            if outcome.slug not in self.probe_known:
                outcome.problems += [probe] if probe is not None else []
            elif probe is None:
                # A notice, not a failure: one seed that happens to pass proves little (a check
                # may depend on the global stream only on some draws). Seen on several runs, the
                # line can go.
                outcome.notices.append(
                    f"{probes.BASELINE_NAME} lists it, but it passed the equivalence probe on "
                    "this run's seeds: if it keeps passing, delete its line"
                )
        if self.mutants and not outcome.problems:
            statuses, cached, failed = grader_client.grade_mutants(
                exercise, cache=self.cache, slots=settings.GRADER_SLOTS
            )
            outcome.problems += [f"mutant {m}: the grader failed to grade it" for m in failed]
            outcome.graded += len(statuses) - cached
            outcome.mutant_ids = set(statuses)
            outcome.mutants = mutation.score(
                exercise.question.slug, statuses, exercise.mutant_waivers or {}, cached=cached
            )
            stale = sorted(set(exercise.mutant_waivers or {}) - set(statuses) - {probes.PROBE_ID})
            outcome.problems += [
                f"exercise.yaml: mutant_waivers: {m} is no longer generated" for m in stale
            ]
