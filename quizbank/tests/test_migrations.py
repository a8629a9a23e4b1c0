"""Migrations that move data run on a database that holds some (a fresh test database does not)."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the tag arrays are PostgreSQL's"),
]


def test_the_tag_arrays_are_filled_from_the_links_a_bank_already_has():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("quizbank")
    executor.migrate([("quizbank", "0008_title_trigrams")])
    try:
        apps = executor.loader.project_state([("quizbank", "0008_title_trigrams")]).apps
        Topic, Question = (
            apps.get_model("quizbank", "Topic"),
            apps.get_model("quizbank", "Question"),
        )
        Application = apps.get_model("quizbank", "Application")
        topic, other = Topic.objects.create(slug="t"), Topic.objects.create(slug="u")
        application = Application.objects.create(slug="a")
        question = Question.objects.create(
            slug="q",
            title="Q",
            prompt="",
            answer="",
            why_asked="",
            difficulty="easy",
            primary_topic=topic,
        )
        question.topics.add(topic, other)
        question.applications.add(application)
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
        with connection.cursor() as cursor:
            cursor.execute("SELECT topic_ids, application_ids FROM quizbank_question")
            assert cursor.fetchall() == [(sorted([topic.pk, other.pk]), [application.pk])]
    finally:
        call_command("migrate", verbosity=0)


def test_every_exercise_a_database_holds_becomes_its_verified_version_1():
    before = [("quizbank", "0013_exercise_fault")]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("quizbank")
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        Topic, Question = (
            apps.get_model("quizbank", "Topic"),
            apps.get_model("quizbank", "Question"),
        )
        Exercise = apps.get_model("quizbank", "Exercise")
        topic = Topic.objects.create(slug="t")
        question = Question.objects.create(
            slug="q",
            title="Q",
            prompt="",
            answer="",
            why_asked="",
            difficulty="easy",
            primary_topic=topic,
            kind="code",
        )
        Exercise.objects.create(
            question=question,
            starter_code="def f():\n    pass\n",
            solution_code="def f():\n    return 1\n",
            checks=[{"name": "c", "visible": True, "code": "out = f()", "compare": "out"}],
            forbid=["eval"],
        )
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
        from quizbank.models import Exercise as Current

        exercise = Current.objects.get(question__slug="q")
        version = exercise.live_version
        assert version is not None and (version.number, version.state) == (1, "verified")
        assert version.graded_content() == exercise.graded_content()
    finally:
        call_command("migrate", verbosity=0)


def _buffers(sql: str, params: list) -> int:
    """The fewest shared buffers PostgreSQL read (hit or read) to run `sql`, of three runs (the
    first may also read what an earlier statement left for it to tidy)."""
    counts = []
    with connection.cursor() as cursor:
        for _ in range(3):
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0][0]["Plan"]
            counts.append(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"])
    return min(counts)


def test_a_wide_rows_search_columns_are_read_from_the_row_itself():
    # What search scores in every candidate row: its search vector and its title's trigrams. A row
    # that also holds a long prompt, answer and why-asked (which PostgreSQL moves out to the TOAST
    # table) keeps those two in the row, so scoring reads no page beyond the row's own.
    import random

    from quizbank.tests.factories import QuestionFactory

    rng = random.Random(7)

    def prose(words: int) -> str:
        # Words that do not compress, so the row has to be made smaller by moving columns out.
        return " ".join(
            "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=7)) for _ in range(words)
        )

    question = QuestionFactory(
        title="Why does my loss become NaN after a few hundred steps of mixed precision training",
        prompt=prose(300),
        answer=prose(3000),
        why_asked=prose(300),
    )
    row = "FROM quizbank_question WHERE id = %s"
    # The row's own columns (its slug is in the row, not the TOAST table) ...
    alone = _buffers(f"SELECT slug {row}", [question.pk])  # noqa: S608 - constant SQL
    # ... and what search scores, read at the same cost.
    scored = _buffers(
        f"SELECT slug, icount(title_trigrams), length(search_vector) {row}",  # noqa: S608
        [question.pk],
    )
    assert alone > 0
    assert scored == alone
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT length(answer), icount(title_trigrams) {row}", [question.pk])  # noqa: S608
        answer_length, trigrams = cursor.fetchone()
    assert trigrams > 20
    # The answer itself went out of the row: reading it costs more pages (the test's row is wide).
    assert _buffers(f"SELECT length(answer) {row}", [question.pk]) > alone  # noqa: S608
    assert answer_length > 20_000
