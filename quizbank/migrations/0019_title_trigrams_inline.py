"""Keep each question's title trigrams inline in its row, as 0007 did for the search vector.

The column was added after 0007 with the default storage, so PostgreSQL moved it out to the TOAST
table in most rows (a row also holds its prompt, answer, BM25 words and embeddings), and the
ranking read it back from there for every question a search scores: "optimizer" on 10,000
questions read 8,057 buffers for 1,727 heap pages, two or three TOAST lookups a row for a few
hundred bytes. With storage MAIN it stays in the row; the UPDATE rewrites the rows (the trigger
computes the trigrams again).
"""

from django.db import migrations

from quizbank.postgres_sql import postgres_only

FORWARDS = """
ALTER TABLE quizbank_question ALTER COLUMN title_trigrams SET STORAGE MAIN;
UPDATE quizbank_question SET title = title;
"""

BACKWARDS = """
ALTER TABLE quizbank_question ALTER COLUMN title_trigrams SET STORAGE EXTENDED;
"""


class Migration(migrations.Migration):
    dependencies = [("quizbank", "0018_question_asked_as")]

    operations = [postgres_only(FORWARDS, BACKWARDS)]
