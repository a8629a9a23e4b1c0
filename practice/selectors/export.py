"""Everything an account owns, for GET /api/me/export/, as sections streamed one row at a time:
memory stays flat whatever the account's size, and the queries are a fixed number per section
(one more per CHUNK interviews). The bank's content (model answers, hidden checks, reference
solutions) is the bank's, not the learner's, so it is not part of it; the API token is a secret
and is left out too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from accounts.models import User
from accounts.selectors import profile_get

from ..models import (
    Activity,
    Bookmark,
    CodeReview,
    Note,
    PlanEnrollment,
    QuestionProgress,
    ReviewCard,
    Submission,
)
from .interviews import interview_list, interview_report

ACTIVITY_COLUMNS = [
    "created_at",
    "kind",
    "question",
    "hint_order",
    "quick_check",
    "correct",
    "rating",
    "submission",
]


def activity_rows(*, user: User) -> Iterator[dict[str, Any]]:
    """The learner's activity, oldest first, one dict per row with ACTIVITY_COLUMNS."""
    rows = (
        Activity.objects.visible_to(user)
        .order_by("created_at", "id")
        .values_list(
            "created_at",
            "kind",
            "question__slug",
            "hint_order",
            "quick_check_id",
            "correct",
            "rating",
            "submission_id",
        )
    )
    for row in rows.iterator():
        yield dict(zip(ACTIVITY_COLUMNS, row, strict=True))


CHUNK = 200  # rows fetched at a time


def account_export(*, user: User) -> Iterator[tuple[str, Any]]:
    """(name, value) per section, in order: a value is a dict, or an iterator of rows."""
    profile = profile_get(user=user)
    mine = {"user": user}
    sections: dict[str, Any] = {
        "account": {
            "username": user.get_username(),
            "email": user.email,
            "date_joined": user.date_joined,
            "last_login": user.last_login,
        },
        "profile": {
            "display_name": profile.display_name,
            "daily_goal": profile.daily_goal,
            "hide_difficulty": profile.hide_difficulty,
        },
        "activity": activity_rows(user=user),
        "progress": (
            QuestionProgress.objects.filter(**mine)
            .order_by("started_at", "id")
            .values(
                "question__slug",
                "state",
                "hints_revealed",
                "answer_revealed",
                "started_at",
                "last_activity_at",
                "solved_at",
            )
        ),
        "submissions": (
            Submission.objects.filter(**mine)
            .order_by("queued_at", "id")
            .values(
                "id",
                "question__slug",
                "mode",
                "code",
                "status",
                "message",
                "checks",
                "diagnosis",
                "output",
                "queued_at",
                "finished_at",
                "duration_ms",
            )
        ),
        "notes": (
            Note.objects.filter(**mine)
            .order_by("id")
            .values("question__slug", "text", "updated_at")
        ),
        "bookmarks": (
            Bookmark.objects.filter(**mine)
            .order_by("created_at", "id")
            .values("question__slug", "created_at")
        ),
        "review_cards": (
            ReviewCard.objects.filter(**mine)
            .order_by("due", "id")
            .values(
                "question__slug",
                "state",
                "step",
                "stability",
                "difficulty",
                "due",
                "last_review",
                "reviews",
                "last_rating",
            )
        ),
        # What scheduled the review cards: recall ratings and verdicts (a failed quick check
        # also counts, and is in `activity`).
        "review_log": (
            row
            for row in activity_rows(user=user)
            if row["kind"] in (Activity.Kind.RATING, Activity.Kind.SUBMISSION)
        ),
        # Code questions reviewed by solving them again, and how the grader rated each. (The
        # snapshot kept to undo the last rating is internal and left out.)
        "code_reviews": (
            CodeReview.objects.filter(**mine)
            .order_by("started_at", "id")
            .values(
                "question__slug",
                "started_at",
                "ended_at",
                "hints_used",
                "retries",
                "rating",
                "gave_up",
                "submission",
            )
        ),
        "interviews": (
            interview_report(interview=interview, with_model_answers=False)
            for interview in interview_list(user=user)
            .order_by("started_at", "id")
            .iterator(chunk_size=CHUNK)
        ),
        "plans": (
            PlanEnrollment.objects.filter(**mine)
            .order_by("started_at")
            .values("plan__slug", "started_at")
        ),
    }
    return iter(sections.items())
