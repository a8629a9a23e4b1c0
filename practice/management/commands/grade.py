import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from practice import grader_client
from quizbank.models import Question


class Command(BaseCommand):
    help = "Grade code files against an exercise through the sandbox pool; one verdict a line."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--code-file", action="append", type=Path, default=[], dest="files")
        parser.add_argument("--reference", action="store_true", help="grade the reference solution")
        parser.add_argument("--starter", action="store_true", help="grade the starter code")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print each verdict as JSON"
        )

    def handle(self, *args, slug, files, reference, starter, as_json, **options):
        question = Question.objects.select_related("exercise").filter(slug=slug).first()
        if question is None:
            raise CommandError(f"{slug}: slug: no such question")
        exercise = getattr(question, "exercise", None)
        if exercise is None:
            raise CommandError(f"{slug}: exercise: this question has no code exercise")
        entries = []
        if reference:
            entries.append(("--reference", exercise.solution_code))
        if starter:
            entries.append(("--starter", exercise.starter_code))
        for path in files:
            try:
                entries.append((str(path), path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"{path}: code-file: {exc}") from exc
        if not entries:
            raise CommandError("give --code-file F, --reference or --starter")
        all_passed = True
        for label, code in entries:
            verdict = grader_client.grade(exercise, code)
            all_passed &= verdict["status"] == "passed"
            if as_json:
                self.stdout.write(json.dumps({"file": label, **verdict}, sort_keys=True))
            else:
                checks = verdict.get("checks", [])
                passed = sum(c["status"] == "passed" for c in checks)
                self.stdout.write(
                    f"{label}: {verdict['status']} ({passed}/{len(checks)} checks) "
                    f"{verdict.get('message', '')}".rstrip()
                )
        grader_client.close_pools()
        if not all_passed:
            sys.exit(1)
