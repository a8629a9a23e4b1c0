from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone

from accounts.models import Visitor
from quizbank.models import choices_constraint

from .submissions import Submission


class OwnedQuerySet(models.QuerySet):
    """The access rule of a learner's own rows (progress, reviews, bookmarks, notes, activity):
    each user sees theirs and nobody else's; an anonymous visitor has none."""

    def visible_to(self, user: Visitor) -> OwnedQuerySet:
        if user is None or not user.is_authenticated:
            return self.none()
        return self.filter(user=user)


class ActivityKind(models.TextChoices):
    HINT = "hint", "Revealed a hint"
    ANSWER = "answer", "Revealed the answer"
    QUICK_CHECK = "quick_check", "Answered a quick check"
    RATING = "rating", "Rated their recall"
    SUBMISSION = "submission", "Got a verdict"


class ActivityRating(models.IntegerChoices):
    # The values are FSRS's (fsrs.Rating), so a row can be replayed into a scheduler.
    AGAIN = 1
    HARD = 2
    GOOD = 3
    EASY = 4

    @property
    def public_name(self) -> str:
        """What the pages, the API and the messages call it: "again", "hard", "good", "easy"."""
        return self.label.lower()

    @classmethod
    def by_public_name(cls) -> dict[str, ActivityRating]:
        return {rating.public_name: rating for rating in cls}


class Activity(models.Model):
    """One thing a learner did with a question. Progress, the heatmap and the streak are made of
    these rows; they are only ever added, never changed."""

    Kind = ActivityKind
    Rating = ActivityRating

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="activities"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="activities"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    created_at = models.DateTimeField(default=timezone.now)
    hint_order = models.PositiveSmallIntegerField(null=True, blank=True)
    quick_check = models.ForeignKey(
        "quizbank.QuickCheck", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    correct = models.BooleanField(
        null=True, blank=True, help_text="For a quick check or a verdict: did it pass?"
    )
    rating = models.PositiveSmallIntegerField(choices=Rating.choices, null=True, blank=True)
    in_review = models.BooleanField(
        default=False,
        help_text="A rating given in a review session (what 'reviewed today' counts).",
    )

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "activities"
        indexes = [models.Index(fields=["user", "-created_at"])]
        constraints = [
            choices_constraint("kind", ActivityKind, "activity_kind_valid"),
            models.CheckConstraint(
                condition=Q(kind="hint", hint_order__isnull=False)
                | (~Q(kind="hint") & Q(hint_order__isnull=True)),
                name="activity_hint_order_iff_hint",
            ),
            models.CheckConstraint(
                condition=Q(kind="rating", rating__gte=1, rating__lte=4)
                | (~Q(kind="rating") & Q(rating__isnull=True)),
                name="activity_rating_iff_rating",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["quick_check", "submission"], correct__isnull=False)
                | (~Q(kind__in=["quick_check", "submission"]) & Q(correct__isnull=True)),
                name="activity_correct_iff_graded",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.kind} {self.question_id} at {self.created_at:%Y-%m-%d %H:%M}"


class QuestionProgressState(models.TextChoices):
    ATTEMPTED = "attempted"
    SOLVED = "solved"


class QuestionProgress(models.Model):
    """Where a learner stands with one question. No row means not started."""

    State = QuestionProgressState

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="question_progress"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="progress"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.ATTEMPTED)
    hints_revealed = models.PositiveSmallIntegerField(default=0)
    answer_revealed = models.BooleanField(default=False)
    started_at = models.DateTimeField(default=timezone.now)
    last_activity_at = models.DateTimeField(default=timezone.now)
    solved_at = models.DateTimeField(null=True, blank=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "question progress"
        indexes = [models.Index(fields=["user", "-last_activity_at"])]
        constraints = [
            models.UniqueConstraint(fields=["user", "question"], name="progress_unique_question"),
            choices_constraint("state", QuestionProgressState, "progress_state_valid"),
            models.CheckConstraint(
                condition=Q(state="solved", solved_at__isnull=False)
                | Q(state="attempted", solved_at__isnull=True),
                name="progress_solved_at_iff_solved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.state} {self.question_id}"


class ReviewCardState(models.IntegerChoices):
    LEARNING = 1
    REVIEW = 2
    RELEARNING = 3


class ReviewCard(models.Model):
    """A question in a learner's review queue, scheduled by FSRS. The fields are fsrs.Card's."""

    State = ReviewCardState

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_cards"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="review_cards"
    )
    state = models.PositiveSmallIntegerField(choices=State.choices, default=State.LEARNING)
    step = models.PositiveSmallIntegerField(null=True, blank=True)
    stability = models.FloatField(null=True, blank=True)
    difficulty = models.FloatField(null=True, blank=True)
    due = models.DateTimeField()
    last_review = models.DateTimeField(null=True, blank=True)
    reviews = models.PositiveIntegerField(default=0)
    last_rating = models.PositiveSmallIntegerField(
        choices=Activity.Rating.choices, null=True, blank=True
    )

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["due", "id"]
        indexes = [models.Index(fields=["user", "due"])]
        constraints = [
            models.UniqueConstraint(fields=["user", "question"], name="reviewcard_unique_question"),
            choices_constraint("state", ReviewCardState, "reviewcard_state_valid"),
            models.CheckConstraint(
                condition=Q(last_rating__isnull=True)
                | Q(
                    last_rating__gte=min(ActivityRating.values),
                    last_rating__lte=max(ActivityRating.values),
                ),
                name="reviewcard_last_rating_valid",
            ),
            models.CheckConstraint(
                condition=Q(stability__isnull=True) | Q(stability__gt=0),
                name="reviewcard_stability_positive",
            ),
            models.CheckConstraint(
                condition=Q(difficulty__isnull=True) | Q(difficulty__gte=1, difficulty__lte=10),
                name="reviewcard_difficulty_range",
            ),
        ]

    def __str__(self) -> str:
        return f"Review of {self.question_id} for {self.user_id}, due {self.due:%Y-%m-%d %H:%M}"


class Bookmark(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="bookmarks"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="bookmarks"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "question"], name="bookmark_unique_question"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} bookmarked {self.question_id}"


MAX_NOTE_CHARS = 10_000


class Note(models.Model):
    """A learner's private note on a question: nobody else, staff included on the site, sees it."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="notes"
    )
    text = models.TextField(max_length=MAX_NOTE_CHARS)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "question"], name="note_unique_question"),
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("text"), MAX_NOTE_CHARS),
                name="note_text_max_length",
            ),
        ]

    def __str__(self) -> str:
        return f"Note of {self.user_id} on {self.question_id}"
