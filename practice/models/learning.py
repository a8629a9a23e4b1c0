from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone

from accounts.models import Visitor
from grader.limits import MAX_SOURCE_BYTES as MAX_CODE_BYTES
from quizbank.models import Queue

MAX_TRIES = 3


class SubmissionQuerySet(models.QuerySet["Submission"]):
    def visible_to(self, user: Visitor) -> SubmissionQuerySet:
        """The one access rule for submissions: a learner sees their own, and only their own."""
        if user is None or not user.is_authenticated:
            return self.none()
        return self.filter(user=user)

    def unfinished(self) -> SubmissionQuerySet:
        return self.filter(status__in=Submission.UNFINISHED)


class Submission(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"
        TIMED_OUT = "timed_out", "Timed out"
        OUT_OF_MEMORY = "out_of_memory", "Out of memory"
        REJECTED = "rejected"

    UNFINISHED = (Status.QUEUED, Status.RUNNING)

    Queue = Queue

    class Mode(models.TextChoices):
        SUBMIT = "submit", "Submit"  # every check; the only mode that can solve a question
        EXAMPLES = "examples", "Run examples"  # the visible checks only; never scored

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="submissions"
    )
    code = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    queue = models.CharField(max_length=3, choices=Queue.choices, default=Queue.CPU)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.SUBMIT)
    message = models.TextField(blank=True, help_text="The overall outcome, or why it is waiting.")
    diagnosis = models.JSONField(
        null=True,
        blank=True,
        help_text="The misconception a failing submission shares with a known wrong solution: "
        "{misconception, hint, confidence}.",
    )
    checks = models.JSONField(default=list, blank=True, help_text="[{name, status, message}]")
    output = models.TextField(blank=True)
    tries = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    # When the sweep should step in if the submission is still queued or running by then.
    deadline_at = models.DateTimeField(null=True, blank=True)
    # Queued but not yet sent to the broker: its learner has GRADER_USER_IN_FLIGHT others in
    # flight on this queue (services/dispatch.py). It has no deadline until it is sent.
    held = models.BooleanField(default=False)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-queued_at"]),
            models.Index(fields=["status", "deadline_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "queued",
                        "running",
                        "passed",
                        "failed",
                        "error",
                        "timed_out",
                        "out_of_memory",
                        "rejected",
                    ]
                ),
                name="submission_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(queue__in=["cpu", "gpu"]), name="submission_queue_valid"
            ),
            # Characters, not bytes, in SQL; the service checks the UTF-8 size exactly.
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("code"), MAX_CODE_BYTES),
                name="submission_code_max_length",
            ),
        ]

    def __str__(self) -> str:
        return f"Submission {self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status not in self.UNFINISHED

    @property
    def overdue(self) -> bool:
        """Unfinished past its deadline: the page stops polling and says so."""
        return (
            not self.finished and self.deadline_at is not None and self.deadline_at < timezone.now()
        )


class OwnedQuerySet(models.QuerySet):
    """The access rule of a learner's own rows (progress, reviews, bookmarks, notes, activity):
    each user sees theirs and nobody else's; an anonymous visitor has none."""

    def visible_to(self, user: Visitor) -> OwnedQuerySet:
        if user is None or not user.is_authenticated:
            return self.none()
        return self.filter(user=user)


class Activity(models.Model):
    """One thing a learner did with a question. Progress, the heatmap and the streak are made of
    these rows; they are only ever added, never changed."""

    class Kind(models.TextChoices):
        HINT = "hint", "Revealed a hint"
        ANSWER = "answer", "Revealed the answer"
        QUICK_CHECK = "quick_check", "Answered a quick check"
        RATING = "rating", "Rated their recall"
        SUBMISSION = "submission", "Got a verdict"

    class Rating(models.IntegerChoices):
        # The values are FSRS's (fsrs.Rating), so a row can be replayed into a scheduler.
        AGAIN = 1
        HARD = 2
        GOOD = 3
        EASY = 4

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
            models.CheckConstraint(
                condition=Q(kind__in=["hint", "answer", "quick_check", "rating", "submission"]),
                name="activity_kind_valid",
            ),
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


class QuestionProgress(models.Model):
    """Where a learner stands with one question. No row means not started."""

    class State(models.TextChoices):
        ATTEMPTED = "attempted"
        SOLVED = "solved"

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
            models.CheckConstraint(
                condition=Q(state__in=["attempted", "solved"]), name="progress_state_valid"
            ),
            models.CheckConstraint(
                condition=Q(state="solved", solved_at__isnull=False)
                | Q(state="attempted", solved_at__isnull=True),
                name="progress_solved_at_iff_solved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.state} {self.question_id}"


class ReviewCard(models.Model):
    """A question in a learner's review queue, scheduled by FSRS. The fields are fsrs.Card's."""

    class State(models.IntegerChoices):
        LEARNING = 1
        REVIEW = 2
        RELEARNING = 3

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
            models.CheckConstraint(condition=Q(state__in=[1, 2, 3]), name="reviewcard_state_valid"),
            models.CheckConstraint(
                condition=Q(last_rating__isnull=True) | Q(last_rating__gte=1, last_rating__lte=4),
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
