from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet

from .models import Application, Question, Topic

LIST_DEFERRED = ["prompt", "answer", "why_asked", "concepts", "search_vector"]


def question_list(*, user: Any) -> QuerySet[Question]:
    """Questions the user may see, with what a list row shows, in a fixed number of queries."""
    return _question_rows(user).defer(*LIST_DEFERRED)


def _question_rows(user: Any) -> QuerySet[Question]:
    return (
        Question.objects.visible_to(user)
        .select_related("primary_topic")
        .prefetch_related(
            Prefetch("topics", queryset=Topic.objects.order_by("order", "slug")),
            Prefetch("applications", queryset=Application.objects.order_by("name")),
        )
    )


def question_detail_queryset(*, user: Any) -> QuerySet[Question]:
    return (
        question_list(user=user)
        .select_related("exercise")
        .prefetch_related("hints", "quick_checks")
    )


def topic_list() -> QuerySet[Topic]:
    published = Q(questions__status=Question.Status.PUBLISHED)
    # Meta.ordering is not applied to aggregate queries, so the order is explicit.
    return Topic.objects.annotate(question_count=Count("questions", filter=published)).order_by(
        "order", "name"
    )


def application_list() -> QuerySet[Application]:
    published = Q(questions__status=Question.Status.PUBLISHED)
    return Application.objects.annotate(
        question_count=Count("questions", filter=published)
    ).order_by("name")
