"""Reads for the question list and a question page, for the learner looking at them: their state
on each question, the facets they can tick, their submissions, what each rating would do, the
grading queue's state, and what to open when the list is empty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    When,
)
from django.db.models import Value as V
from django.utils import timezone

from accounts.models import User, Visitor, signed_in
from quizbank import selectors as bank_selectors
from quizbank.models import Question

from .. import grader_client, scheduling, workers
from ..models import Bookmark, Note, QuestionProgress, ReviewCard, Submission
from ..models.submissions import no_worker_message

PREVIOUS_SUBMISSIONS = 10
DIFFICULTY_ORDER = Case(
    When(difficulty=Question.Difficulty.EASY, then=V(0)),
    When(difficulty=Question.Difficulty.MEDIUM, then=V(1)),
    default=V(2),
    output_field=IntegerField(),
)


class LearnerState(models.TextChoices):
    """Where a learner stands with a question, as the list's filter names it."""

    SOLVED = "solved"
    ATTEMPTED = "attempted"
    NOT_STARTED = "not_started", "Not started"


# -- the question list -------------------------------------------------------------------------


def with_learner_state(queryset: QuerySet[Question], *, user: Visitor) -> QuerySet[Question]:
    """Annotate each question with the learner's `progress_state` (None: not started) and
    whether they `bookmarked` it; no extra query per row."""
    if not signed_in(user):
        return queryset
    progress = QuestionProgress.objects.filter(user=user, question=OuterRef("pk"))
    bookmarks = Bookmark.objects.filter(user=user, question=OuterRef("pk"))
    return queryset.annotate(
        progress_state=Subquery(progress.values("state")[:1]), bookmarked=Exists(bookmarks)
    )


def filter_by_state(
    queryset: QuerySet[Question], *, user: Visitor, states: list[str]
) -> QuerySet[Question]:
    """Questions the learner has solved, attempted (not solved yet) or not started; any of
    `states`. Anonymous visitors have no progress, so for them this filters nothing."""
    if not signed_in(user) or not states:
        return queryset
    progress = QuestionProgress.objects.filter(user=user, question=OuterRef("pk"))
    condition: Any = Q()
    if LearnerState.SOLVED in states:
        condition |= Exists(progress.filter(state=QuestionProgress.State.SOLVED))
    if LearnerState.ATTEMPTED in states:
        condition |= Exists(progress.filter(state=QuestionProgress.State.ATTEMPTED))
    if LearnerState.NOT_STARTED in states:
        condition |= ~Exists(progress)
    return queryset.filter(condition)


def filter_bookmarked(queryset: QuerySet[Question], *, user: Visitor, value: bool | None):
    if not signed_in(user) or value is None:
        return queryset
    bookmarks = Exists(Bookmark.objects.filter(user=user, question=OuterRef("pk")))
    return queryset.filter(bookmarks if value else ~bookmarks)


def state_counts(queryset: QuerySet[Question], *, user: User) -> dict[str, int]:
    """How many of `queryset` the learner solved, attempted and not started, in one query."""
    progress = QuestionProgress.objects.filter(user=user, question=OuterRef("pk"))
    # Through `pk__in`: a search's relevance cut-off is a window, which cannot be aggregated over.
    rows = Question.objects.filter(pk__in=queryset.order_by().values("pk"))
    return rows.aggregate(
        solved=Count("pk", filter=Q(Exists(progress.filter(state="solved")))),
        attempted=Count("pk", filter=Q(Exists(progress.filter(state="attempted")))),
        not_started=Count("pk", filter=~Q(Exists(progress))),
    )


def bookmarked_count(queryset: QuerySet[Question], *, user: User) -> int:
    bookmarks = Bookmark.objects.filter(user=user, question=OuterRef("pk"))
    return queryset.order_by().filter(Exists(bookmarks)).count()


FACET_LEGENDS = {
    "progress": "Your progress",
    "bookmarked": "Bookmarks",
    "topic": "Topic",
    "difficulty": "Difficulty",
    "kind": "Kind",
    "application": "Real-world application",
}


def facet_groups(filterset, *, user: Visitor, hide_difficulty: bool) -> list[dict[str, Any]]:
    """The list's facets in display order, each option with its count and whether it is ticked."""
    facets = bank_selectors.question_facets(filterset)
    if signed_in(user):
        counts = state_counts(filterset.queryset_without("progress"), user=user)
        facets["progress"] = [
            {"value": value, "label": label, "count": counts[value]}
            for value, label in LearnerState.choices
        ]
        facets["bookmarked"] = [
            {
                "value": "true",
                "label": "Bookmarked",
                "count": bookmarked_count(filterset.queryset_without("bookmarked"), user=user),
            }
        ]
    groups = []
    for name, legend in FACET_LEGENDS.items():
        if name not in facets or (name == "difficulty" and hide_difficulty):
            continue
        chosen = filterset.form[name].value()
        chosen = {str(chosen).lower()} if name == "bookmarked" else set(chosen or [])
        for option in facets[name]:
            option["selected"] = option["value"] in chosen
        groups.append({"name": name, "legend": legend, "options": facets[name]})
    return groups


def list_count(facets: list[dict[str, Any]]) -> int:
    """How many questions the list holds, from the kind facet (no COUNT query of its own): every
    question has exactly one kind, and the facet counts each kind with every other filter applied,
    so the ticked kinds (all, when none is) add up to the list."""
    options = next(group["options"] for group in facets if group["name"] == "kind")
    ticked = [o for o in options if o["selected"]] or options
    return sum(o["count"] for o in ticked)


# -- one question ------------------------------------------------------------------------------


@dataclass
class QuestionState:
    """What the question page shows of the learner's own practice of one question."""

    progress: QuestionProgress | None = None
    card: ReviewCard | None = None
    bookmarked: bool = False
    note: Note | None = None
    submissions: list[Submission] | None = None

    @property
    def hints_revealed(self) -> int:
        return self.progress.hints_revealed if self.progress else 0

    @property
    def answer_revealed(self) -> bool:
        return bool(self.progress and self.progress.answer_revealed)


def question_state(*, user: Visitor, question: Question) -> QuestionState:
    if not signed_in(user):
        return QuestionState()
    mine = {"user": user, "question": question}
    submissions = None
    if hasattr(question, "exercise"):
        submissions = list(submission_list(user=user, question=question))
    return QuestionState(
        progress=QuestionProgress.objects.filter(**mine).first(),
        card=ReviewCard.objects.filter(**mine).first(),
        bookmarked=Bookmark.objects.filter(**mine).exists(),
        note=Note.objects.filter(**mine).first(),
        submissions=submissions,
    )


def submission_list(*, user: Visitor, question: Question) -> QuerySet[Submission]:
    """The learner's latest submissions to a question, newest first (example runs apart)."""
    submissions = Submission.objects.visible_to(user).filter(
        question=question, mode=Submission.Mode.SUBMIT
    )
    return submissions[:PREVIOUS_SUBMISSIONS]


def submission_get(*, user: Visitor, pk: int) -> Submission | None:
    return bank_selectors.select_question(Submission.objects.visible_to(user).filter(pk=pk)).first()


def rating_intervals(
    *, user: Visitor, question: Question, card: ReviewCard | None
) -> dict[str, Any] | None:
    """The question page's rating buttons: scheduling.intervals for the learner's card (or the
    card a first rating would create); None for a visitor, who cannot rate."""
    if not signed_in(user):
        return None
    return scheduling.intervals(
        card=card or ReviewCard(user=user, question=question, due=timezone.now())
    )


def question_popular(*, user: Visitor, limit: int = 5) -> list[Question]:
    """The questions most learners have started, for a list that found nothing."""
    return list(
        Question.objects.visible_to(user)
        .annotate(learners=Count("progress"))
        .order_by("-learners", "slug")
        .only("slug", "title")[:limit]
    )


def question_suggested(*, user: Visitor) -> Question | None:
    """A question to start next: one not started yet, in the topic the learner was last working
    in if it has any left, easiest first, then in syllabus order."""
    candidates = (
        Question.objects.published().select_related("primary_topic").defer(*Question.DERIVED_FIELDS)
    )
    if not signed_in(user):
        return (
            candidates.annotate(level=DIFFICULTY_ORDER)
            .order_by("level", "primary_topic__order", "slug")
            .first()
        )
    started = QuestionProgress.objects.filter(user=user, question=OuterRef("pk"))
    last = QuestionProgress.objects.filter(user=user).order_by("-last_activity_at")
    last_topic = Subquery(last.values("question__primary_topic")[:1])
    return (
        candidates.filter(~Exists(started))
        .annotate(
            level=DIFFICULTY_ORDER,
            elsewhere=Case(
                When(primary_topic=last_topic, then=V(0)), default=V(1), output_field=IntegerField()
            ),
        )
        .order_by("elsewhere", "level", "primary_topic__order", "slug")
        .first()
    )


def queue_state(queue: str) -> dict[str, Any]:
    """What an exercise page says about its grading queue: whether a worker serves it (and the
    sentence a queued submission says when none does), whether this site grades in-process
    instead (no broker, the development default), and then whether its sandbox is still warming
    up (the first run waits for it)."""
    in_process = bool(settings.CELERY_TASK_ALWAYS_EAGER)
    return {
        "online": in_process or workers.queue_has_worker(queue),
        "offline_message": no_worker_message(queue),
        "in_process": in_process,
        "warming": in_process and grader_client.pool_starting(queue),
    }
