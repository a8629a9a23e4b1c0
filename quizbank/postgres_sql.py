"""SQL that only PostgreSQL runs, for migrations: SQLite (the embedded default) has no storage
settings, triggers or extensions of this kind, and its fallback ranker needs none."""

from django.db import migrations


def postgres_only(forwards: str, backwards: str) -> migrations.RunPython:
    """A migration step that runs `forwards` (or `backwards`, unapplied) on PostgreSQL only."""

    def run(sql: str):
        def step(apps, schema_editor) -> None:
            if schema_editor.connection.vendor == "postgresql":
                schema_editor.execute(sql)

        return step

    return migrations.RunPython(run(forwards), run(backwards))
