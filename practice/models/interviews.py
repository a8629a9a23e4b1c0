"""Mock interviews: a timed run through questions in order, like the real thing."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from quizbank.models import choices_constraint

from .learning import OwnedQuerySet, Submission

# The limits of an interview, read by the model, the API serializer and the page's form.
MIN_QUESTIONS, MAX_QUESTIONS = 1, 20
MIN_MINUTES, MAX_MINUTES = 5, 180
MAX_ANSWER_CHARS = 10_000
# Each question is worth QUESTION_POINTS; each hint taken costs HINT_COST of them.
QUESTION_POINTS = 10
HINT_COST = 2


class MockInterviewStatus(models.TextChoices):
    ACTIVE = "active", "In progress"
    FINISHED = "finished"
    TIMED_OUT = "timed_out", "Time ran out"


class MockInterview(models.Model):
    Status = MockInterviewStatus

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="interviews"
    )
    title = models.CharField(max_length=120, blank=True, help_text="The preset's name, if any.")
    topics = models.ManyToManyField("quizbank.Topic", blank=True, related_name="+")
    difficulty = models.JSONField(default=list, blank=True, help_text="Difficulties asked for.")
    minutes = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(MIN_MINUTES), MaxValueValidator(MAX_MINUTES)]
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    started_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    questions = models.ManyToManyField(
        "quizbank.Question", through="InterviewQuestion", related_name="+"
    )

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["user", "-started_at"])]
        constraints = [
            choices_constraint("status", MockInterviewStatus, "interview_status_valid"),
            models.CheckConstraint(
                condition=Q(minutes__gte=MIN_MINUTES, minutes__lte=MAX_MINUTES),
                name="interview_minutes_range",
            ),
            models.CheckConstraint(
                condition=Q(status="active", finished_at__isnull=True)
                | (~Q(status="active") & Q(finished_at__isnull=False)),
                name="interview_finished_at_iff_over",
            ),
        ]

    def __str__(self) -> str:
        return f"Interview {self.pk} of {self.user_id} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def time_left(self, now=None) -> timedelta:
        return max(timedelta(0), self.ends_at - (now or timezone.now()))

    def finish(self, *, now=None) -> None:
        """End the interview: on time if asked before `ends_at`, else because time ran out."""
        if not self.active:
            return
        now = now or timezone.now()
        self.status = self.Status.FINISHED if now < self.ends_at else self.Status.TIMED_OUT
        self.finished_at = min(now, self.ends_at)
        self.save(update_fields=["status", "finished_at"])


class InterviewQuestionOutcome(models.TextChoices):
    UNANSWERED = "unanswered"
    SKIPPED = "skipped"
    ANSWERED = "answered", "Answered (nothing to grade: compare with the model answer)"
    PENDING = "pending", "Being graded"
    PASSED = "passed"
    PARTIAL = "partial", "Partly right"
    FAILED = "failed"
    # Unpublished while the interview ran: skipped for the learner, left out of the score.
    WITHDRAWN = "withdrawn", "Withdrawn from the bank (not scored)"


class InterviewQuestion(models.Model):
    """One question of an interview, and how the learner did on it."""

    Outcome = InterviewQuestionOutcome

    interview = models.ForeignKey(MockInterview, on_delete=models.CASCADE, related_name="items")
    question = models.ForeignKey("quizbank.Question", on_delete=models.CASCADE, related_name="+")
    order = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.UNANSWERED)
    answer_text = models.TextField(blank=True, max_length=MAX_ANSWER_CHARS)
    checks_total = models.PositiveSmallIntegerField(default=0)
    checks_correct = models.PositiveSmallIntegerField(default=0)
    submission = models.ForeignKey(
        Submission, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    hints_used = models.PositiveSmallIntegerField(default=0)
    answered_at = models.DateTimeField(null=True, blank=True)
    time_spent = models.DurationField(null=True, blank=True)

    class Meta:
        ordering = ["interview", "order"]
        constraints = [
            models.UniqueConstraint(fields=["interview", "order"], name="interview_unique_order"),
            models.UniqueConstraint(
                fields=["interview", "question"], name="interview_unique_question"
            ),
            choices_constraint("outcome", InterviewQuestionOutcome, "interview_outcome_valid"),
            models.CheckConstraint(
                condition=Q(checks_correct__lte=models.F("checks_total")),
                name="interview_checks_correct_le_total",
            ),
        ]

    def __str__(self) -> str:
        return f"Question {self.order} of interview {self.interview_id}"

    @property
    def done(self) -> bool:
        return self.answered_at is not None

    def current_outcome(self) -> str:
        """The outcome now: a code answer's comes from its submission's verdict."""
        if self.submission is None or self.outcome != self.Outcome.PENDING:
            return self.outcome
        if not self.submission.finished:
            return self.Outcome.PENDING
        passed = self.submission.status == Submission.Status.PASSED
        return self.Outcome.PASSED if passed else self.Outcome.FAILED

    def points(self) -> int | None:
        """Points earned, or None while there is nothing to grade (free text only, or pending)."""
        outcome = self.current_outcome()
        if outcome in (self.Outcome.ANSWERED, self.Outcome.PENDING, self.Outcome.WITHDRAWN):
            return None
        if outcome == self.Outcome.PASSED:
            earned = QUESTION_POINTS
        elif outcome == self.Outcome.PARTIAL:
            earned = QUESTION_POINTS * self.checks_correct // max(self.checks_total, 1)
        else:
            earned = 0
        return max(0, earned - HINT_COST * self.hints_used)
