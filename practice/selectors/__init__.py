"""Reads about a learner's practice: their state on each question, what to do next, the review
queue and the progress dashboard. Every function takes the user and reads only their rows.
Mock interviews' reads are in interviews.py, study plans' in plans.py, review decks' in
review.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, TypeGuard

import fsrs
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
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import User, Visitor
from quizbank.models import Question, Topic

from .. import grader_client, workers
from ..models import Activity, Bookmark, Note, QuestionProgress, ReviewCard, Submission
from ..services.learning import SCHEDULER, fsrs_card, next_due

HEATMAP_WEEKS = 53
RECENT_ACTIVITY = 12
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


def _signed_in(user: Visitor) -> TypeGuard[User]:
    return user is not None and user.is_authenticated


# -- the question list -------------------------------------------------------------------------


def with_learner_state(queryset: QuerySet[Question], *, user: Visitor) -> QuerySet[Question]:
    """Annotate each question with the learner's `progress_state` (None: not started) and
    whether they `bookmarked` it; no extra query per row."""
    if not _signed_in(user):
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
    if not _signed_in(user) or not states:
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
    if not _signed_in(user) or value is None:
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
    if not _signed_in(user):
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
    return Submission.objects.visible_to(user).select_related("question").filter(pk=pk).first()


# -- what to do next ---------------------------------------------------------------------------


def due_reviews(*, user: Visitor, now: Any = None) -> QuerySet[ReviewCard]:
    """The learner's review cards that are due, most overdue first, on questions they may see."""
    now = now or timezone.now()
    return (
        ReviewCard.objects.visible_to(user)
        .filter(due__lte=now, question__in=Question.objects.visible_to(user))
        .select_related("question__primary_topic")
        .order_by("due", "id")
    )


def review_intervals(*, card: ReviewCard, now: Any = None) -> dict[str, Any]:
    """What each rating would do to the card: {"again": timedelta, ...} until its next review,
    for the rating buttons. FSRS fuzzes long intervals, so the real one may differ a little."""
    now = now or timezone.now()
    intervals = {}
    for value, label in Activity.Rating.choices:
        scheduled, _ = SCHEDULER.review_card(
            fsrs_card(card), fsrs.Rating(value), review_datetime=now
        )
        intervals[label.lower()] = next_due(scheduled=scheduled.due, rating=value, now=now) - now
    return intervals


def rating_intervals(
    *, user: Visitor, question: Question, card: ReviewCard | None
) -> dict[str, Any] | None:
    """The question page's rating buttons: review_intervals for the learner's card (or the card a
    first rating would create); None for a visitor, who cannot rate."""
    if not _signed_in(user):
        return None
    return review_intervals(
        card=card or ReviewCard(user=user, question=question, due=timezone.now())
    )


def next_review_at(*, user: Visitor, now: Any = None):
    now = now or timezone.now()
    card = ReviewCard.objects.visible_to(user).filter(due__gt=now).order_by("due").first()
    return card.due if card else None


def question_in_progress(*, user: Visitor) -> Question | None:
    """The question the learner last worked on without solving it."""
    row = (
        QuestionProgress.objects.visible_to(user)
        .filter(state=QuestionProgress.State.ATTEMPTED, question__status=Question.Status.PUBLISHED)
        .select_related("question__primary_topic")
        .order_by("-last_activity_at")
        .first()
    )
    return row.question if row else None


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
    candidates = Question.objects.published().select_related("primary_topic")
    if not _signed_in(user):
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


# -- progress ----------------------------------------------------------------------------------


def _active_days(user: Visitor) -> dict[date, int]:
    rows = (
        Activity.objects.visible_to(user)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    )
    return {row["day"]: row["n"] for row in rows}


def _streaks(days: set[date], today: date) -> tuple[int, int]:
    """(current, longest). The current streak still counts if today has nothing yet."""
    current = 0
    day = today if today in days else today - timedelta(days=1)
    while day in days:
        current += 1
        day -= timedelta(days=1)
    longest = run = 0
    previous = None
    for day in sorted(days):
        run = run + 1 if previous is not None and day - previous == timedelta(days=1) else 1
        longest = max(longest, run)
        previous = day
    return current, longest


def _heatmap(counts: dict[date, int], today: date) -> list[list[dict[str, Any]]]:
    """HEATMAP_WEEKS columns of 7 days (Monday first) ending with this week; level 0-4."""
    start = today - timedelta(days=today.weekday(), weeks=HEATMAP_WEEKS - 1)
    top = max(counts.values(), default=0)
    weeks = []
    for w in range(HEATMAP_WEEKS):
        week = []
        for d in range(7):
            day = start + timedelta(weeks=w, days=d)
            n = counts.get(day, 0)
            level = 0 if n == 0 else min(4, 1 + (3 * n) // max(top, 1))
            week.append({"date": day, "count": n, "level": level, "future": day > today})
        weeks.append(week)
    return weeks


def _topic_mastery(user: Visitor) -> list[dict[str, Any]]:
    published = Question.objects.published()
    rows = published.order_by().values("topics").annotate(n=Count("pk"))
    totals = {row["topics"]: row["n"] for row in rows}
    rows = (
        QuestionProgress.objects.visible_to(user)
        .filter(question__in=published)
        .order_by()
        .values("question__topics", "state")
        .annotate(n=Count("pk"))
    )
    mine = {(row["question__topics"], row["state"]): row["n"] for row in rows}
    topics = []
    for topic in Topic.objects.order_by("order", "name"):
        total = totals.get(topic.pk, 0)
        if not total:
            continue
        solved = mine.get((topic.pk, QuestionProgress.State.SOLVED), 0)
        attempted = mine.get((topic.pk, QuestionProgress.State.ATTEMPTED), 0)
        topics.append(
            {
                "slug": topic.slug,
                "name": topic.name,
                "solved": solved,
                "attempted": attempted,
                "total": total,
                "solved_percent": round(100 * solved / total),
                "attempted_percent": round(100 * attempted / total),
            }
        )
    return topics


def _describe(activity: Activity) -> str:
    kind = Activity.Kind
    if activity.kind == kind.HINT:
        return f"Revealed hint {activity.hint_order}"
    if activity.kind == kind.QUICK_CHECK:
        return "Answered a quick check " + ("right" if activity.correct else "wrong")
    if activity.kind == kind.RATING and activity.rating is not None:
        return f"Rated recall: {Activity.Rating(activity.rating).label.lower()}"
    if activity.kind == kind.SUBMISSION:
        return "Code passed" if activity.correct else "Code did not pass"
    return activity.get_kind_display()


UNPUBLISHED_TITLE = "A question that is no longer published"


def activity_recent(*, user: Visitor, limit: int = RECENT_ACTIVITY) -> list[dict[str, Any]]:
    """The learner's latest activity. Their history stays when a question is unpublished, but
    never its content: such a row has no slug (no link) and a neutral title."""
    rows = Activity.objects.visible_to(user).select_related("question")[:limit]
    visible = set(
        Question.objects.visible_to(user)
        .filter(pk__in={a.question_id for a in rows})
        .values_list("pk", flat=True)
    )
    return [
        {
            "at": a.created_at,
            "kind": a.kind,
            "description": _describe(a),
            "question": a.question.slug if a.question_id in visible else None,
            "question_title": a.question.title if a.question_id in visible else UNPUBLISHED_TITLE,
            "correct": a.correct,
        }
        for a in rows
    ]


def activity_today(*, user: Visitor) -> int:
    """The number of questions practised today (the daily goal counts questions, not clicks)."""
    start = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    return (
        Activity.objects.visible_to(user)
        .filter(created_at__gte=start)
        .values("question")
        .distinct()
        .count()
    )


def progress_summary(*, user: Visitor) -> dict[str, Any]:
    """The dashboard's figures, and GET /api/progress/'s: per-topic mastery, activity per day,
    streaks, totals and the most recent activity."""
    today = timezone.localdate()
    counts = _active_days(user)
    current, longest = _streaks(set(counts), today)
    topics = _topic_mastery(user)
    progress = QuestionProgress.objects.visible_to(user).filter(
        question__status=Question.Status.PUBLISHED
    )
    totals = progress.order_by().aggregate(
        solved=Count("pk", filter=Q(state=QuestionProgress.State.SOLVED)),
        attempted=Count("pk", filter=Q(state=QuestionProgress.State.ATTEMPTED)),
    )
    heatmap = _heatmap(counts, today)
    first_day = heatmap[0][0]["date"]
    return {
        "totals": {
            **totals,
            "questions": Question.objects.published().count(),
            "reviews_due": due_reviews(user=user).count(),
            "active_days": len(counts),
        },
        "streak": {"current": current, "longest": longest},
        "topics": topics,
        "days": [
            {"date": day, "count": n} for day, n in sorted(counts.items()) if day >= first_day
        ],
        "heatmap": heatmap,
        "recent": activity_recent(user=user),
    }


def queue_state(queue: str) -> dict[str, bool]:
    """What an exercise page says about its grading queue: whether a worker serves it, whether
    this site grades in-process instead (no broker, the development default), and then whether
    its sandbox is still warming up (the first run waits for it)."""
    in_process = bool(settings.CELERY_TASK_ALWAYS_EAGER)
    return {
        "online": in_process or workers.queue_has_worker(queue),
        "in_process": in_process,
        "warming": in_process and grader_client.pool_starting(queue),
    }


def streak_current(*, user: Visitor) -> int:
    current, _ = _streaks(set(_active_days(user)), timezone.localdate())
    return current
