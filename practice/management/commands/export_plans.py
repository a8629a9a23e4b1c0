from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from practice.services.plans import plans_export


class Command(BaseCommand):
    help = "Write the study plans from the database to PATH, one <slug>.yaml each."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)

    def handle(self, *args, path, **options):
        if path.exists() and not path.is_dir():
            raise CommandError(f"{path}: (path): is not a directory")
        count = plans_export(path=path)
        self.stdout.write(f"export_plans: wrote {count} plans to {path}")
