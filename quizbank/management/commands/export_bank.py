from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from quizbank.bank.sync import bank_export


class Command(BaseCommand):
    help = "Write the question bank from the database to PATH in the bank's file format."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)

    def handle(self, *args, path, **options):
        if path.exists() and not path.is_dir():
            raise CommandError(f"{path}: (path): is not a directory")
        count = bank_export(path=path)
        self.stdout.write(f"export_bank: wrote {count} questions to {path}")
