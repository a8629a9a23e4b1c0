"""Review sessions beyond one rating: a code question reviewed by solving it again, and what the
learner's last review rating changed, so that it can be undone exactly."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .learning import Activity, OwnedQuerySet


class CodeReview(models.Model):
    """A code question under review: the learner solves it again in a fresh editor, and the
    review's rating comes from the grader (see services/review.py). It lasts from when /review/
    first shows the question until a submission passes or the learner gives up."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="code_reviews"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="code_reviews"
    )
    started_at = models.DateTimeField()
    hints_used = models.PositiveSmallIntegerField(default=0)
    retries = models.PositiveSmallIntegerField(
        default=0, help_text="Submissions in this review that did not pass."
    )
    # Where the learner came from (the deck's query), so "Next card" stays in the deck.
    deck = models.CharField(max_length=200, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    rating = models.PositiveSmallIntegerField(
        choices=Activity.Rating.choices, null=True, blank=True
    )
    gave_up = models.BooleanField(default=False)
    submission = models.ForeignKey(
        "practice.Submission",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The submission that passed and ended the review.",
    )

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "question"],
                condition=Q(ended_at__isnull=True),
                name="codereview_one_open_per_question",
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True, rating__isnull=True)
                | Q(ended_at__isnull=False, rating__gte=1, rating__lte=4),
                name="codereview_rating_iff_ended",
            ),
        ]

    def __str__(self) -> str:
        return f"Code review of {self.question_id} for {self.user_id} from {self.started_at}"

    @property
    def open(self) -> bool:
        return self.ended_at is None


class ReviewUndo(models.Model):
    """The learner's last rating in review, and the card and progress as they were before it:
    one row per learner, replaced by each rating, deleted by undo."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_undo"
    )
    # The review-log row the rating added; undo deletes it.
    activity = models.OneToOneField(Activity, on_delete=models.CASCADE, related_name="+")
    card = models.ForeignKey("practice.ReviewCard", on_delete=models.CASCADE, related_name="+")
    # The card's fields before the rating; null when the rating created the card.
    card_before = models.JSONField(null=True, blank=True)
    # Its `reviews` after the rating: if anything reviewed the card since, undo would lose that.
    reviews_after = models.PositiveIntegerField()
    progress_before = models.JSONField(default=dict, blank=True)
    code_review = models.ForeignKey(
        CodeReview, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()

    objects = OwnedQuerySet.as_manager()

    def __str__(self) -> str:
        return f"Undo of {self.activity_id} for {self.user_id}"
