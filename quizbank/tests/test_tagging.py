"""A question's tags as the list reads them (quizbank/tagging.py) stay equal to its links,
whatever writes them: on PostgreSQL the arrays on the row are kept by triggers. (The list page's
facet counts, which filter inside a subquery of the question table, are tested in
practice/tests/test_question_list.py.)"""

import pytest
from django.db import connection

from quizbank.models import Question

from .factories import ApplicationFactory, QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def tags(question):
    row = Question.objects.filter(pk=question.pk)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT topic_ids, application_ids FROM quizbank_question WHERE id = %s",
                [question.pk],
            )
            topics, applications = cursor.fetchone()
        return sorted(topics), sorted(applications)
    return (
        sorted(t for t in row.values_list("topics", flat=True) if t is not None),
        sorted(a for a in row.values_list("applications", flat=True) if a is not None),
    )


def test_the_tags_follow_every_way_links_are_written():
    a, b, c = TopicFactory.create_batch(3)
    cv, nlp = ApplicationFactory.create_batch(2)
    question = QuestionFactory(primary_topic=a, topics=[b], applications=[cv])
    assert tags(question) == (sorted([a.pk, b.pk]), [cv.pk])
    question.topics.add(c)
    question.applications.set([nlp])
    assert tags(question) == (sorted([a.pk, b.pk, c.pk]), [nlp.pk])
    question.topics.remove(b)
    Question.applications.through.objects.filter(question=question).delete()
    assert tags(question) == (sorted([a.pk, c.pk]), [])
    other = QuestionFactory(primary_topic=a)
    # A link moved to another question: both rows change.
    Question.topics.through.objects.filter(question=question, topic=c).update(question=other)
    assert tags(question) == ([a.pk], [])
    assert tags(other) == (sorted([a.pk, c.pk]), [])
    question.topics.clear()
    assert tags(question) == ([], [])
