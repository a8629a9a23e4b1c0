"""Keep each question's search vector inline in its row.

A question row holds its prompt, answer and answer vector too, so PostgreSQL moved about half the
search vectors (title, concepts and prompt: under 1 kB on average) out to the TOAST table, and
every `@@` and `ts_rank_cd` of a search read them back from there, once per use (measured: a seq
scan of 10,000 questions read 7,000 buffers for a 2,000-page table). With storage MAIN the large
text columns go out first and the search vector stays in the row; the UPDATE rewrites the rows.
"""

from django.db import migrations

FORWARDS = """
ALTER TABLE quizbank_question ALTER COLUMN search_vector SET STORAGE MAIN;
UPDATE quizbank_question SET title = title;
"""

BACKWARDS = """
ALTER TABLE quizbank_question ALTER COLUMN search_vector SET STORAGE EXTENDED;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARDS)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARDS)


class Migration(migrations.Migration):
    dependencies = [("quizbank", "0006_exercise_reference_time")]

    operations = [migrations.RunPython(forwards, backwards)]
