"""Each question's title trigrams, stored, for ranking by title similarity without re-reading it.

Search ranks a question partly by pg_trgm's similarity of its title to the query. pg_trgm builds
the title's trigrams on every call, and that was most of a broad search's time (measured: about
46 us a row, 10,000 titles in 0.46 s, against 0.08 s from stored ones). The trigger now stores
them as sorted integers (`quizbank_trigrams`: pg_trgm's own trigrams, each hashed with md5, which
no upgrade changes), and search.postgres computes the same ratio from them with intarray:
shared / (title's + query's - shared), as pg_trgm does. The column is PostgreSQL's alone and not
on the model: nothing but the ranking query reads it.
"""

from django.contrib.postgres.operations import CreateExtension
from django.db import migrations

FUNCTION_BODY = r"""
CREATE OR REPLACE FUNCTION quizbank_question_search_vector() RETURNS trigger AS $$
DECLARE
  concepts text := coalesce(
      (SELECT string_agg(value, ' ') FROM jsonb_array_elements_text(
          CASE WHEN jsonb_typeof(NEW.concepts) = 'array' THEN NEW.concepts ELSE '[]'::jsonb END
      )), '');
BEGIN
  NEW.search_vector :=
      setweight(to_tsvector('english', quizbank_search_text(NEW.title)), 'A')
   || setweight(to_tsvector('english', quizbank_search_text(concepts || ' ' ||
          replace(coalesce(NEW.slug, ''), '-', ' '))), 'B')
   || setweight(to_tsvector('english', quizbank_search_text(NEW.prompt)), 'C');
  NEW.answer_vector := setweight(
      to_tsvector('english', quizbank_search_text(NEW.answer)), 'D');
  %(trigrams)s
  INSERT INTO quizbank_searchterm (word)
    SELECT DISTINCT word FROM regexp_split_to_table(
        lower(coalesce(NEW.title, '') || ' ' || concepts || ' ' || coalesce(NEW.slug, '')),
        '[^a-z0-9]+') AS word
    WHERE length(word) >= 4
  ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;
"""

FORWARDS = (
    r"""
CREATE OR REPLACE FUNCTION quizbank_trigrams(value text) RETURNS int[] AS $$
  SELECT coalesce(array_agg(DISTINCT ('x' || left(md5(t), 8))::bit(32)::int ORDER BY
                            ('x' || left(md5(t), 8))::bit(32)::int), '{}')
  FROM unnest(show_trgm(coalesce(value, ''))) AS t
$$ LANGUAGE sql IMMUTABLE PARALLEL SAFE;

ALTER TABLE quizbank_question ADD COLUMN title_trigrams int[];
"""
    + FUNCTION_BODY % {"trigrams": "NEW.title_trigrams := quizbank_trigrams(NEW.title);"}
    + """
UPDATE quizbank_question SET title = title;
"""
)

BACKWARDS = (
    FUNCTION_BODY % {"trigrams": ""}
    + """
ALTER TABLE quizbank_question DROP COLUMN IF EXISTS title_trigrams;
DROP FUNCTION IF EXISTS quizbank_trigrams(text);
"""
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARDS)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARDS)


class Migration(migrations.Migration):
    dependencies = [("quizbank", "0007_search_vector_inline")]

    operations = [CreateExtension("intarray"), migrations.RunPython(forwards, backwards)]
