"""Reads for the home page and the progress dashboard: what is due, the question left half-done,
today against the daily goal, streaks, the heatmap, mastery per topic and recent activity."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import Profile, Visitor
from accounts.selectors import profile_get
from quizbank import selectors as bank_selectors
from quizbank.models import Question, Topic

from ..models import Activity, QuestionProgress, ReviewCard

HEATMAP_WEEKS = 53
RECENT_ACTIVITY = 12


def due_reviews(*, user: Visitor, now: Any = None) -> QuerySet[ReviewCard]:
    """The learner's review cards that are due, most overdue first, on questions they may see."""
    now = now or timezone.now()
    return bank_selectors.select_question(
        ReviewCard.objects.visible_to(user).filter(
            due__lte=now, question__in=Question.objects.visible_to(user)
        ),
        "question",
        "question__primary_topic",
    ).order_by("due", "id")


def next_review_at(*, user: Visitor, now: Any = None):
    now = now or timezone.now()
    card = ReviewCard.objects.visible_to(user).filter(due__gt=now).order_by("due").first()
    return card.due if card else None


def question_in_progress(*, user: Visitor) -> Question | None:
    """The question the learner last worked on without solving it."""
    row = (
        bank_selectors.select_question(
            QuestionProgress.objects.visible_to(user).filter(
                state=QuestionProgress.State.ATTEMPTED, question__status=Question.Status.PUBLISHED
            ),
            "question",
            "question__primary_topic",
        )
        .order_by("-last_activity_at")
        .first()
    )
    return row.question if row else None


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
        return f"Rated recall: {Activity.Rating(activity.rating).public_name}"
    if activity.kind == kind.SUBMISSION:
        return "Code passed" if activity.correct else "Code did not pass"
    return activity.get_kind_display()


UNPUBLISHED_TITLE = "A question that is no longer published"


def activity_recent(*, user: Visitor, limit: int = RECENT_ACTIVITY) -> list[dict[str, Any]]:
    """The learner's latest activity. Their history stays when a question is unpublished, but
    never its content: such a row has no slug (no link) and a neutral title."""
    rows = bank_selectors.select_question(Activity.objects.visible_to(user))[:limit]
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


def daily_goal(*, user: Visitor, profile: Profile | None = None) -> dict[str, int]:
    """Today against the learner's daily goal: questions practised today, the goal, and how far
    along (percent, at most 100). `profile`: the learner's, when the caller has it already."""
    today = activity_today(user=user)
    goal = (profile or profile_get(user=user)).daily_goal
    return {"today": today, "goal": goal, "percent": min(100, round(100 * today / goal))}


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


def streak_current(*, user: Visitor) -> int:
    current, _ = _streaks(set(_active_days(user)), timezone.localdate())
    return current
