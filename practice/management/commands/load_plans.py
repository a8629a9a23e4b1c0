import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from practice.services.plans import plans_load
from quizbank.bank.sync import BankError


class Command(BaseCommand):
    help = (
        "Load the study plans from their files (upsert by slug; all or nothing). Run it after "
        "load_bank: plans name the bank's questions."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths", nargs="*", type=Path, help="Plan files or folders (default: fixtures/plans)."
        )

    def handle(self, *args, paths, **options):
        paths = paths or [Path(settings.BASE_DIR) / "fixtures" / "plans"]
        try:
            report = plans_load(paths=paths)
        except BankError as exc:
            for line in exc.errors:
                self.stderr.write(line)
            self.stderr.write(f"load_plans: {exc}; nothing was loaded")
            sys.exit(1)
        counts = ", ".join(f"{len(slugs)} {what}" for what, slugs in report.items())
        self.stdout.write(f"load_plans: {counts}")
