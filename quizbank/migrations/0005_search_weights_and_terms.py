"""Search that weighs what matters (quizbank/search.py).

- The title weighs most (A), then the concepts and the slug (B), then the prompt (C); the answer
  keeps its own vector (D).
- PyTorch names (and paths, key/value) are indexed as their parts: PostgreSQL's parser reads `nn.Module` or
  `torch.nn.functional.cross_entropy` as one host-name token that no learner types, so a dot
  between two word characters becomes a space first (search.py does the same to the query, and
  searches a name as a phrase of its parts).
- pg_trgm and a table of the words of titles, concepts and slugs, for correcting a learner's typos.
  The trigger adds the words of every row it indexes; a word is never removed (a correction to a
  word no question holds any more just finds nothing).
"""

from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION quizbank_search_text(value text) RETURNS text AS $$
  SELECT regexp_replace(coalesce(value, ''), '(?<=\w)[./](?=\w)', ' ', 'g')
$$ LANGUAGE sql IMMUTABLE;

CREATE TABLE quizbank_searchterm (word text PRIMARY KEY);
CREATE INDEX quizbank_searchterm_trgm ON quizbank_searchterm USING gin (word gin_trgm_ops);

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
  INSERT INTO quizbank_searchterm (word)
    SELECT DISTINCT word FROM regexp_split_to_table(
        lower(coalesce(NEW.title, '') || ' ' || concepts || ' ' || coalesce(NEW.slug, '')),
        '[^a-z0-9]+') AS word
    WHERE length(word) >= 4
  ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS quizbank_question_search_vector_update ON quizbank_question;
CREATE TRIGGER quizbank_question_search_vector_update
  BEFORE INSERT OR UPDATE OF slug, title, prompt, concepts, answer ON quizbank_question
  FOR EACH ROW EXECUTE FUNCTION quizbank_question_search_vector();

UPDATE quizbank_question SET title = title;
"""

DROP = r"""
CREATE OR REPLACE FUNCTION quizbank_question_search_vector() RETURNS trigger AS $$
BEGIN
  NEW.search_vector :=
      setweight(to_tsvector('english', coalesce(NEW.title, '')), 'A')
   || setweight(to_tsvector('english', coalesce(NEW.prompt, '')), 'B')
   || setweight(to_tsvector('english', coalesce(
          (SELECT string_agg(value, ' ') FROM jsonb_array_elements_text(
              CASE WHEN jsonb_typeof(NEW.concepts) = 'array' THEN NEW.concepts ELSE '[]'::jsonb END
          )), '')), 'C');
  NEW.answer_vector := setweight(to_tsvector('english', coalesce(NEW.answer, '')), 'D');
  RETURN NEW;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS quizbank_question_search_vector_update ON quizbank_question;
CREATE TRIGGER quizbank_question_search_vector_update
  BEFORE INSERT OR UPDATE OF title, prompt, concepts, answer ON quizbank_question
  FOR EACH ROW EXECUTE FUNCTION quizbank_question_search_vector();
DROP TABLE IF EXISTS quizbank_searchterm;
DROP FUNCTION IF EXISTS quizbank_search_text(text);
UPDATE quizbank_question SET title = title;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("quizbank", "0004_exercise_limits_from_grader")]

    operations = [TrigramExtension(), migrations.RunPython(forwards, backwards)]
