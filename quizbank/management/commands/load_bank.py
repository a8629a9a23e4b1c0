import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from quizbank.bank.sync import BankError, bank_load


class Command(BaseCommand):
    help = "Load the question bank from its files (upsert by slug; all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="*",
            type=Path,
            help="Bank folders or question folders (default: fixtures/bank).",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="Take the files even for questions edited in the admin since the last import.",
        )

    def handle(self, *args, paths, force=False, **options):
        paths = paths or [Path(settings.BASE_DIR) / "fixtures" / "bank"]
        try:
            report = bank_load(paths=paths, force=force)
        except BankError as exc:
            for line in exc.errors:
                self.stderr.write(line)
            self.stderr.write(f"load_bank: {exc}; nothing was loaded")
            sys.exit(1)
        for line in report.conflicts():
            self.stdout.write(f"load_bank: {line}")
        self.stdout.write(f"load_bank: {report}")
