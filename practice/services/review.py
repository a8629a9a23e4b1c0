"""Review sessions: a rating given in review (which the learner may undo, exactly), and a code
question reviewed by solving it again, whose rating comes from the grader.

The rule for a code review, in one place (`code_review_rating`): a pass at the first submission
with no hint taken in this review is "good"; a pass after a hint or a failed submission is "hard";
giving up is "again". A failed submission leaves the review open, so the learner can try again.
Example runs are never scored and do not count as tries.

Preconditions shared by all: `user` is signed in and `question` is visible to them (the views
fetch both through selectors/review.py, which 404s anything that is not the learner's).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.models import User
from quizbank import errors
from quizbank.models import Hint, Question

from ..models import Activity, CodeReview, QuestionProgress, ReviewCard, ReviewUndo, Submission
from .learning import rating_record

Rating = Activity.Rating

CARD_FIELDS = (
    *("state", "step", "stability", "difficulty"),
    *("due", "last_review", "reviews", "last_rating"),
)
PROGRESS_FIELDS = ("state", "solved_at", "last_activity_at")


class UndoRefused(errors.Conflict):
    """The learner's own rating that cannot be undone, and why (a 409 for the views)."""

    field = "rating"


def _snapshot(row: models.Model, fields: tuple[str, ...]) -> dict[str, Any]:
    values = {name: getattr(row, name) for name in fields}
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}


def _restore(row: models.Model, snapshot: dict[str, Any]) -> None:
    for name, value in snapshot.items():
        field = row._meta.get_field(name)
        if isinstance(field, models.DateTimeField) and value is not None:
            value = parse_datetime(value)
        setattr(row, name, value)


def _rate(
    *,
    user: User,
    question: Question,
    rating: int,
    now: datetime,
    code_review: CodeReview | None = None,
) -> ReviewCard:
    """Rate the card and remember what it and the learner's progress were before, replacing the
    learner's previous undo (only the last rating can be undone)."""
    before = ReviewCard.objects.select_for_update().filter(user=user, question=question).first()
    progress = QuestionProgress.objects.filter(user=user, question=question).first()
    card_before = _snapshot(before, CARD_FIELDS) if before else None
    progress_before = _snapshot(progress, PROGRESS_FIELDS) if progress else {}
    card, activity = rating_record(
        user=user, question=question, rating=rating, now=now, in_review=True
    )
    ReviewUndo.objects.update_or_create(
        user=user,
        defaults={
            "activity": activity,
            "card": card,
            "card_before": card_before,
            "reviews_after": card.reviews,
            "progress_before": progress_before,
            "code_review": code_review,
            "created_at": now,
        },
    )
    return card


@transaction.atomic
def review_answer(*, user: User, question: Question, rating: int) -> ReviewCard:
    """The learner rates their recall of a card in review; the rating can be undone until the
    next one. A code question is rated by solving it (code_review_*), not by this."""
    if hasattr(question, "exercise"):
        reason = "A code question is reviewed by solving it again; the grader rates it."
        raise ValidationError({"rating": reason})
    return _rate(user=user, question=question, rating=rating, now=timezone.now())


@transaction.atomic
def review_undo(*, user: User, activity: Activity) -> ReviewCard | None:
    """Take back the learner's last rating in review: the card gets back every field it had
    (or goes, if the rating created it), the rating's review-log row is deleted, the question's
    progress is as it was, and a code review is forgotten so the next one starts afresh.

    Raises UndoRefused when `activity` is not the learner's last rating in review, or when the
    card was reviewed again since (a quick check or a submission): undoing would lose that."""
    undo = ReviewUndo.objects.select_for_update().filter(user=user).first()
    if undo is None or undo.activity_id != activity.pk:
        raise UndoRefused("Only your last rating in review can be undone.")
    card = ReviewCard.objects.select_for_update().get(pk=undo.card_id)
    if card.reviews != undo.reviews_after:
        raise UndoRefused("This card was reviewed again since, so the rating stays.")
    question = activity.question
    progress = QuestionProgress.objects.filter(user=user, question=question).first()
    if progress is not None:
        if undo.progress_before:
            _restore(progress, undo.progress_before)
            progress.save()
        else:
            progress.delete()
    if undo.code_review_id is not None:
        CodeReview.objects.filter(pk=undo.code_review_id).delete()
    activity.delete()  # deletes `undo` with it (cascade)
    if undo.card_before is None:
        card.delete()
        return None
    _restore(card, undo.card_before)
    card.full_clean()
    card.save()
    return card


# -- code questions --------------------------------------------------------------------------


def code_review_rating(*, passed: bool, hints_used: int, retries: int) -> int:
    """The rating a code review earns: the one place this rule lives."""
    if not passed:
        return Rating.AGAIN
    if hints_used or retries:
        return Rating.HARD
    return Rating.GOOD


@transaction.atomic
def code_review_start(*, user: User, question: Question, deck: str = "") -> CodeReview:
    """The learner's open review of a code question, opened now if there is none."""
    review, _ = CodeReview.objects.get_or_create(
        user=user,
        question=question,
        ended_at=None,
        defaults={"started_at": timezone.now(), "deck": deck[:200]},
    )
    return review


@transaction.atomic
def code_review_hint(*, review: CodeReview) -> CodeReview:
    """Show the next hint in this review (hints taken earlier do not count, nor show)."""
    review = CodeReview.objects.select_for_update().get(pk=review.pk)
    count = Hint.objects.filter(question=review.question_id).count()
    if not review.open:
        raise ValidationError({"hint": "This review is over."})
    if review.hints_used >= count:
        raise ValidationError({"hint": f"This question has {count} hint(s); all are shown."})
    review.hints_used += 1
    review.save(update_fields=["hints_used"])
    return review


def _finish(
    review: CodeReview, *, rating: int, now: datetime, submission: Submission | None = None
) -> ReviewCard:
    review.ended_at = now
    review.rating = rating
    review.gave_up = submission is None
    review.submission = submission
    review.full_clean()
    review.save()
    return _rate(
        user=review.user, question=review.question, rating=rating, now=now, code_review=review
    )


def _locked_reviews():
    """Reviews locked with their user and question read alongside: only the review's own row is
    locked. Without `of`, PostgreSQL locked the joined question's row FOR UPDATE too, and every
    learner starting an interview with that question waited for this transaction (issue 28)."""
    return CodeReview.objects.select_for_update(of=("self",)).select_related("user", "question")


@transaction.atomic
def code_review_give_up(*, review: CodeReview) -> ReviewCard:
    review = _locked_reviews().get(pk=review.pk)
    if not review.open:
        raise ValidationError({"review": "This review is over."})
    return _finish(review, rating=Rating.AGAIN, now=timezone.now())


def code_review_verdict(*, submission: Submission, now: datetime) -> bool:
    """Called by verdict_record with a graded submission: if it belongs to the learner's open
    review of the question, a pass ends the review with the rating it earned and a failure counts
    as a retry. Returns whether it did (then the usual scheduling must not happen too)."""
    if submission.mode != Submission.Mode.SUBMIT:
        return False
    review = (
        _locked_reviews()
        .filter(
            user=submission.user_id,
            question=submission.question_id,
            ended_at=None,
            started_at__lte=submission.queued_at,
        )
        .first()
    )
    if review is None:
        return False
    if submission.status == Submission.Status.PASSED:
        rating = code_review_rating(
            passed=True, hints_used=review.hints_used, retries=review.retries
        )
        _finish(review, rating=rating, now=now, submission=submission)
    else:
        review.retries += 1
        review.save(update_fields=["retries"])
    return True
