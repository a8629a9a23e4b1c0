"""Services for what a learner does with a question: reveal hints and the answer, answer quick
checks, rate their recall (which schedules the next review with FSRS), get a verdict, bookmark and
keep a note. Submissions and their grading are in submissions.py; it calls `verdict_record` and
`verdict_schedule`.
Review sessions (decks, undo, code reviewed by solving again) are in review.py.

Every service here takes a signed-in user; the views let anonymous visitors read and try things
without calling them. Preconditions shared by all: `question` is visible to `user`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from quizbank.models import Question, QuickCheck

from .. import scheduling
from ..models import (
    MAX_NOTE_CHARS,
    Activity,
    Bookmark,
    Note,
    QuestionProgress,
    ReviewCard,
    Submission,
)

Rating = Activity.Rating

# Verdicts that count as a failed exercise, rated "again". An "error" is most often the learner's
# (an exception while loading, a syntax error); the sweep's own give-up never reaches here.
FAILED_VERDICTS = frozenset(
    {
        Submission.Status.FAILED,
        Submission.Status.ERROR,
        Submission.Status.TIMED_OUT,
        Submission.Status.OUT_OF_MEMORY,
        Submission.Status.REJECTED,
    }
)


def _progress(*, user: User, question: Question, now: datetime) -> QuestionProgress:
    progress, _ = QuestionProgress.objects.select_for_update().get_or_create(
        user=user, question=question, defaults={"started_at": now, "last_activity_at": now}
    )
    progress.last_activity_at = now
    return progress


def _solve(progress: QuestionProgress, *, now: datetime) -> None:
    if progress.state != QuestionProgress.State.SOLVED:
        progress.state = QuestionProgress.State.SOLVED
        progress.solved_at = now


def _schedule(
    *, user: User, question: Question, rating: int, now: datetime, automatic: bool = False
) -> ReviewCard:
    """Review the learner's card for `question` with `rating`, creating the card if needed.

    `automatic` ratings (a failed quick check or exercise) do not rate "again" twice in a row: a
    learner trying until they get it right has forgotten it once, not once per try."""
    card = ReviewCard.objects.select_for_update().filter(user=user, question=question).first()
    if card is None:
        card = ReviewCard(user=user, question=question, due=now)
    elif automatic and rating == Rating.AGAIN and card.last_rating == Rating.AGAIN:
        return card
    scheduling.rate(card, rating=rating, now=now)
    # The fields as full_clean checks them, without its queries: the user and question rows are
    # locked by the caller's transaction, and the database enforces the unique pair and the check
    # constraints. Checking each with a query cost 13 round trips per verdict (issue 28).
    card.full_clean(exclude=["user", "question"], validate_unique=False, validate_constraints=False)
    card.save()
    return card


@transaction.atomic
def hint_reveal(*, user: User, question: Question, order: int) -> QuestionProgress:
    """Record that the learner revealed hints 1..`order` (1-based). Revealing one again is not a
    new activity. Raises ValidationError when the question has no such hint."""
    count = question.hints.count()
    if not 1 <= order <= count:
        raise ValidationError({"order": f"This question has {count} hint(s); there is no {order}."})
    now = timezone.now()
    progress = _progress(user=user, question=question, now=now)
    if order > progress.hints_revealed:
        Activity.objects.create(
            user=user, question=question, kind=Activity.Kind.HINT, hint_order=order, created_at=now
        )
        progress.hints_revealed = order
    progress.save()
    return progress


@transaction.atomic
def answer_reveal(*, user: User, question: Question) -> QuestionProgress:
    now = timezone.now()
    progress = _progress(user=user, question=question, now=now)
    if not progress.answer_revealed:
        Activity.objects.create(
            user=user, question=question, kind=Activity.Kind.ANSWER, created_at=now
        )
        progress.answer_revealed = True
    progress.save()
    return progress


def quick_check_answer(
    *, user: User | AnonymousUser, check: QuickCheck, response: Any, record: bool = True
) -> dict[str, Any]:
    """Grade an answer to a quick check; for a signed-in learner, record it, and a wrong answer
    puts the question in their review queue as "again". Anyone may call this. `record=False`
    grades without recording (a retry: the first attempt is the one progress counts)."""
    correct = check.is_correct(response)
    if record and user is not None and user.is_authenticated:
        with transaction.atomic():
            now = timezone.now()
            question = check.question
            progress = _progress(user=user, question=question, now=now)
            Activity.objects.create(
                user=user,
                question=question,
                kind=Activity.Kind.QUICK_CHECK,
                quick_check=check,
                correct=correct,
                created_at=now,
            )
            progress.save()
            if not correct:
                _schedule(
                    user=user, question=question, rating=Rating.AGAIN, now=now, automatic=True
                )
    return {"correct": correct, "answer": check.answer, "explanation": check.explanation}


@transaction.atomic
def review_rate(*, user: User, question: Question, rating: int) -> ReviewCard:
    """The learner rates how well they recalled the answer; FSRS schedules the next review.
    Rating a concept question good or easy solves it (a code question is solved by passing)."""
    card, _ = rating_record(user=user, question=question, rating=rating, now=timezone.now())
    return card


def rating_record(
    *, user: User, question: Question, rating: int, now: datetime, in_review: bool = False
) -> tuple[ReviewCard, Activity]:
    """review_rate's work, returning the review-log row too (marked `in_review` for a rating
    given in a review session). Call inside a transaction."""
    if rating not in Rating.values:
        raise ValidationError({"rating": "Rate with again, hard, good or easy."})
    progress = _progress(user=user, question=question, now=now)
    activity = Activity.objects.create(
        user=user,
        question=question,
        kind=Activity.Kind.RATING,
        rating=rating,
        created_at=now,
        in_review=in_review,
    )
    if question.kind == Question.Kind.CONCEPT and rating >= Rating.GOOD:
        _solve(progress, now=now)
    progress.save()
    return _schedule(user=user, question=question, rating=rating, now=now), activity


@transaction.atomic
def verdict_record(*, submission: Submission) -> bool:
    """Called once a submission has its verdict: a pass solves the question, and the verdict is an
    activity. False: the verdict does not count. Its review is scheduled next, by
    review.code_review_verdict or else verdict_schedule."""
    now = submission.finished_at or timezone.now()
    passed = submission.status == Submission.Status.PASSED
    if not passed and submission.status not in FAILED_VERDICTS:
        return False
    user, question = submission.user, submission.question
    progress = _progress(user=user, question=question, now=now)
    Activity.objects.create(
        user=user,
        question=question,
        kind=Activity.Kind.SUBMISSION,
        submission=submission,
        correct=passed,
        created_at=now,
    )
    if passed:
        _solve(progress, now=now)
    progress.save()
    return True


def verdict_schedule(*, submission: Submission) -> None:
    """Schedule the question's next review from a counted verdict outside a code review (a code
    question under review is rated once, when its review ends): a pass counts as a good review, a
    failure as "again"."""
    now = submission.finished_at or timezone.now()
    passed = submission.status == Submission.Status.PASSED
    rating = Rating.GOOD if passed else Rating.AGAIN
    _schedule(
        user=submission.user,
        question=submission.question,
        rating=rating,
        now=now,
        automatic=not passed,
    )


@transaction.atomic
def bookmark_toggle(*, user: User, question: Question) -> bool:
    """Bookmark the question, or remove the bookmark; returns whether it is now bookmarked."""
    deleted, _ = Bookmark.objects.filter(user=user, question=question).delete()
    if deleted:
        return False
    Bookmark.objects.get_or_create(user=user, question=question)
    return True


def note_save(*, user: User, question: Question, text: str) -> Note | None:
    """Keep the learner's private note on a question; an empty note is deleted."""
    text = text.strip()
    if len(text) > MAX_NOTE_CHARS:
        raise ValidationError(
            {"text": f"A note holds at most {MAX_NOTE_CHARS} characters; this has {len(text)}."}
        )
    if not text:
        Note.objects.filter(user=user, question=question).delete()
        return None
    note, _ = Note.objects.update_or_create(user=user, question=question, defaults={"text": text})
    return note
