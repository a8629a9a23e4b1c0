"""Factories for the learner's rows; the bank's are in quizbank/tests/factories.py."""

from datetime import timedelta

import factory
from django.utils import timezone

from accounts.tests.factories import UserFactory
from practice.models import (
    Activity,
    Bookmark,
    Note,
    QuestionProgress,
    ReviewCard,
    Submission,
)
from quizbank.tests.factories import ExerciseFactory, QuestionFactory


class SubmissionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Submission

    user = factory.SubFactory(UserFactory)
    question = factory.LazyFunction(lambda: ExerciseFactory().question)
    code = "def double(x):\n    return x * 2\n"
    status = Submission.Status.QUEUED
    deadline_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=2))


class QuestionProgressFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QuestionProgress

    user = factory.SubFactory(UserFactory)
    question = factory.SubFactory(QuestionFactory)


class ActivityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Activity

    user = factory.SubFactory(UserFactory)
    question = factory.SubFactory(QuestionFactory)
    kind = Activity.Kind.ANSWER


class ReviewCardFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReviewCard

    user = factory.SubFactory(UserFactory)
    question = factory.SubFactory(QuestionFactory)
    due = factory.LazyFunction(timezone.now)


class BookmarkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Bookmark

    user = factory.SubFactory(UserFactory)
    question = factory.SubFactory(QuestionFactory)


class NoteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Note

    user = factory.SubFactory(UserFactory)
    question = factory.SubFactory(QuestionFactory)
    text = "Strides, not shapes."
