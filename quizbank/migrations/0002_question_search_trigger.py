"""Keep Question.search_vector current with a PostgreSQL trigger, and index it.

A trigger rather than Python code: every write path (admin, load_bank, a raw UPDATE) keeps the index
right, and the weights live next to the index they feed. On other databases this is a no-op and search
falls back to substring matching (quizbank/search.py).
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION quizbank_question_search_vector() RETURNS trigger AS $$
BEGIN
  NEW.search_vector :=
      setweight(to_tsvector('english', coalesce(NEW.title, '')), 'A')
   || setweight(to_tsvector('english', coalesce(NEW.prompt, '')), 'B')
   || setweight(to_tsvector('english', coalesce(
          (SELECT string_agg(value, ' ') FROM jsonb_array_elements_text(
              CASE WHEN jsonb_typeof(NEW.concepts) = 'array' THEN NEW.concepts ELSE '[]'::jsonb END
          )), '')), 'C')
   || setweight(to_tsvector('english', coalesce(NEW.answer, '')), 'D');
  RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER quizbank_question_search_vector_update
  BEFORE INSERT OR UPDATE OF title, prompt, concepts, answer ON quizbank_question
  FOR EACH ROW EXECUTE FUNCTION quizbank_question_search_vector();

CREATE INDEX quizbank_question_search_vector_gin ON quizbank_question USING gin (search_vector);

UPDATE quizbank_question SET title = title;
"""

DROP = """
DROP TRIGGER IF EXISTS quizbank_question_search_vector_update ON quizbank_question;
DROP FUNCTION IF EXISTS quizbank_question_search_vector();
DROP INDEX IF EXISTS quizbank_question_search_vector_gin;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("quizbank", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
