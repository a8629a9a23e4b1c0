"""Each question's topic and application ids, stored on its row, for the list's facets.

A list filtered by topic and application checked each candidate against the link tables (one
EXISTS per facet): at 10,000 questions the filter's count took 6.4 ms where two arrays with GIN
indexes take 2.4 ms (`topic_ids && '{2,3}' AND application_ids && '{1}'`, one BitmapAnd), and each
row's tags are read from the row instead of two subqueries. Statement triggers on the link tables
keep the arrays equal to the links, whatever writes them (the admin, load_bank, a bulk insert):
each statement recomputes the arrays of the questions it touched. The columns are PostgreSQL's
alone and not on the model (quizbank/tagging.py reads them); elsewhere the link tables are read.
"""

from django.db import migrations

LINKS = (("quizbank_question_topics", "topic"), ("quizbank_question_applications", "application"))

# A question's ids of one kind, as its links hold them.
IDS = "ARRAY(SELECT l.%(kind)s_id::int FROM %(table)s l WHERE l.question_id = q.id ORDER BY 1)"

SYNC = r"""
CREATE OR REPLACE FUNCTION quizbank_question_%(kind)s_ids_sync() RETURNS trigger AS $$
BEGIN
  UPDATE quizbank_question q
     SET %(kind)s_ids = %(ids)s
   WHERE q.id IN (SELECT question_id FROM changed);
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""

# One trigger per operation: a statement trigger names its transition tables, and only UPDATE
# has both. For an UPDATE the old rows matter too (a link moved to another question).
TRIGGERS = r"""
CREATE OR REPLACE FUNCTION quizbank_question_%(kind)s_ids_sync_update() RETURNS trigger AS $$
BEGIN
  UPDATE quizbank_question q
     SET %(kind)s_ids = %(ids)s
   WHERE q.id IN (SELECT question_id FROM changed UNION SELECT question_id FROM was);
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER %(kind)s_ids_on_insert AFTER INSERT ON %(table)s
  REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION quizbank_question_%(kind)s_ids_sync();
CREATE TRIGGER %(kind)s_ids_on_delete AFTER DELETE ON %(table)s
  REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION quizbank_question_%(kind)s_ids_sync();
CREATE TRIGGER %(kind)s_ids_on_update AFTER UPDATE ON %(table)s
  REFERENCING NEW TABLE AS changed OLD TABLE AS was
  FOR EACH STATEMENT EXECUTE FUNCTION quizbank_question_%(kind)s_ids_sync_update();
"""

COLUMN = r"""
ALTER TABLE quizbank_question ADD COLUMN %(kind)s_ids int[] NOT NULL DEFAULT '{}';
CREATE INDEX quizbank_question_%(kind)s_ids_gin ON quizbank_question
  USING gin (%(kind)s_ids gin__int_ops);
"""

# Last, after every change to the table's definition: the update queues the foreign keys'
# deferred checks, and PostgreSQL refuses DDL on a table with pending trigger events.
FILL = r"""
UPDATE quizbank_question q
   SET %(kind)s_ids = %(ids)s;
"""

DROP = r"""
DROP TRIGGER IF EXISTS %(kind)s_ids_on_insert ON %(table)s;
DROP TRIGGER IF EXISTS %(kind)s_ids_on_delete ON %(table)s;
DROP TRIGGER IF EXISTS %(kind)s_ids_on_update ON %(table)s;
DROP FUNCTION IF EXISTS quizbank_question_%(kind)s_ids_sync();
DROP FUNCTION IF EXISTS quizbank_question_%(kind)s_ids_sync_update();
ALTER TABLE quizbank_question DROP COLUMN IF EXISTS %(kind)s_ids;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table, kind in LINKS:
            values = {"table": table, "kind": kind}
            schema_editor.execute((COLUMN + SYNC + TRIGGERS) % {**values, "ids": IDS % values})
        for table, kind in LINKS:
            values = {"table": table, "kind": kind}
            schema_editor.execute(FILL % {**values, "ids": IDS % values})


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table, kind in LINKS:
            schema_editor.execute(DROP % {"table": table, "kind": kind})


class Migration(migrations.Migration):
    dependencies = [("quizbank", "0008_title_trigrams")]

    operations = [migrations.RunPython(forwards, backwards)]
