"""A learner's code submission and its status changes: services/submissions.py, dispatch.py and
sweep.py call the transitions, each of which sets every field that goes with its status."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone

from accounts.models import Visitor
from grader.limits import MAX_SOURCE_BYTES as MAX_CODE_BYTES
from quizbank.models import Queue, choices_constraint

MAX_TRIES = 3


def no_worker_message(queue: str) -> str:
    """What a queued submission says while no worker serves its queue, and what the exercise
    panel says then (selectors.queue_state): one sentence for both."""
    name = queue.upper()
    return (
        f"No {name} worker is online right now: submissions wait in the {name} queue "
        "and are graded as soon as one connects."
    )


class SubmissionQuerySet(models.QuerySet["Submission"]):
    def visible_to(self, user: Visitor) -> SubmissionQuerySet:
        """The one access rule for submissions: a learner sees their own, and only their own."""
        if user is None or not user.is_authenticated:
            return self.none()
        return self.filter(user=user)

    def unfinished(self) -> SubmissionQuerySet:
        return self.filter(status__in=Submission.UNFINISHED)


class SubmissionStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMED_OUT = "timed_out", "Timed out"
    OUT_OF_MEMORY = "out_of_memory", "Out of memory"
    REJECTED = "rejected"


class SubmissionMode(models.TextChoices):
    SUBMIT = "submit", "Submit"  # every check; the only mode that can solve a question
    EXAMPLES = "examples", "Run examples"  # the visible checks only; never scored
    # The learner's code, then lines of their own calling it: what they print (issue 27). No
    # check, no reference; never scored.
    SCRATCH = "scratch", "Try your own input"


class Submission(models.Model):
    Status = SubmissionStatus

    UNFINISHED = (Status.QUEUED, Status.RUNNING)

    Queue = Queue
    Mode = SubmissionMode

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="submissions"
    )
    # The version of the exercise the verdict was decided against (set with the verdict).
    exercise_version = models.ForeignKey(
        "quizbank.ExerciseVersion",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="submissions",
    )
    code = models.TextField()
    scratch = models.TextField(
        blank=True, default="", help_text="Try your own input: the lines run after the code."
    )
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
    # Sent in (or waiting for) the heavy lane: its learner ran much code lately, or mostly code that
    # ran out of time, and such learners together have at most GRADER_HEAVY_IN_FLIGHT in flight
    # per queue (services/dispatch.py).
    heavy = models.BooleanField(default=False)
    # The client's Idempotency-Key header: a POST retried after a lost answer (a 503, a reset
    # connection) finds the submission it made instead of making a second one.
    idempotency_key = models.CharField(max_length=80, blank=True, default="", editable=False)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-queued_at"]),
            models.Index(fields=["status", "deadline_at"]),
        ]
        constraints = [
            choices_constraint("status", SubmissionStatus, "submission_status_valid"),
            choices_constraint("queue", Queue, "submission_queue_valid"),
            # Characters, not bytes, in SQL; the service checks the UTF-8 size exactly.
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("code"), MAX_CODE_BYTES),
                name="submission_code_max_length",
            ),
            models.UniqueConstraint(
                fields=["user", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="submission_idempotency_key_unique",
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

    @property
    def certain_diagnosis(self) -> dict[str, str] | None:
        """The diagnosis a learner is shown: only a certain one (the outputs matched a known
        mistake's on every failing check; older rows may hold a "pattern" guess, never shown
        since issue 27), with the misconception worded as a belief the learner may hold."""
        found = self.diagnosis
        if not isinstance(found, dict) or found.get("confidence") != "outputs":
            return None
        misconception = found.get("misconception")
        if not isinstance(misconception, str) or not misconception:
            return None
        return {**found, "belief": as_belief(misconception)}

    # The transitions. Each sets every field that goes with its status and saves them (a new row
    # is inserted whole); the caller holds the row's lock where another process could race it.

    def _save_fields(self, fields: list[str]) -> None:
        self.save(update_fields=fields if self.pk is not None else None)

    def mark_queued(
        self,
        *,
        now: datetime,
        worker_online: bool,
        count_try: bool = False,
        heavy: bool | None = None,
    ) -> None:
        """Waiting in the broker for a worker: due back by its queue's deadline, after which the
        sweep looks for it. `worker_online` False: it says that nobody serves its queue yet.
        `count_try`: a re-send after a lost message or worker counts as a try. `heavy`: sent in
        the heavy lane or not (None: as it was)."""
        deadline = (
            settings.GRADER_GPU_QUEUE_DEADLINE
            if self.queue == Queue.GPU
            else settings.GRADER_QUEUE_DEADLINE
        )
        self.status = self.Status.QUEUED
        self.held = False
        self.message = "" if worker_online else no_worker_message(self.queue)
        self.deadline_at = now + timedelta(seconds=deadline)
        fields = ["status", "held", "message", "deadline_at"]
        if heavy is not None:
            self.heavy = heavy
            fields.append("heavy")
        if count_try:
            self.tries += 1
            fields.append("tries")
        self._save_fields(fields)

    def mark_held(self, *, reason: str, heavy: bool = False) -> None:
        """Queued but kept out of the broker until its learner's earlier submission finishes (or,
        `heavy`, until the heavy lane has room); it has no deadline (the dispatcher or the sweep
        sends it). The reason comes before what the message said already ("no GPU worker is
        online" still applies to a held GPU submission)."""
        self.held = True
        self.heavy = heavy
        self.message = " ".join(filter(None, [reason, self.message]))
        self.deadline_at = None
        self._save_fields(["held", "heavy", "message", "deadline_at"])

    def mark_running(self, *, worker: str, now: datetime) -> None:
        """Taken by `worker`, which holds it under a lease it renews while grading (the sweep takes
        back a row whose lease ran out). Each start counts as a try."""
        self.status = self.Status.RUNNING
        self.tries += 1
        self.worker = worker[:200]
        self.started_at = now
        self.deadline_at = now + timedelta(seconds=settings.GRADER_LEASE_SECONDS)
        self._save_fields(["status", "tries", "worker", "started_at", "deadline_at"])

    def mark_finished(
        self,
        *,
        status: str,
        message: str,
        checks: list[dict[str, Any]],
        diagnosis: dict[str, str] | None,
        output: str,
        duration_ms: int | None,
        now: datetime,
        exercise_version: Any = None,
    ) -> None:
        """The grader's verdict, stored whole, with the exercise version it was decided
        against; nothing is due any more."""
        self.exercise_version = exercise_version
        self.status = status
        self.message = message
        self.checks = checks
        self.diagnosis = diagnosis
        self.output = output
        self.duration_ms = duration_ms
        self.finished_at = now
        self.deadline_at = None
        self._save_fields(
            [
                "exercise_version",
                "status",
                "message",
                "checks",
                "diagnosis",
                "output",
                "duration_ms",
                "finished_at",
                "deadline_at",
            ]
        )

    def mark_failed(self, *, reason: str, now: datetime) -> None:
        """Ended without a verdict (lost, or never picked up): an error that says why."""
        self.status = self.Status.ERROR
        self.message = reason
        self.finished_at = now
        self.deadline_at = None
        self._save_fields(["status", "message", "finished_at", "deadline_at"])


# A first word kept as written: a name, not the start of a sentence.
_NAMES = {"Adam", "AdamW", "Python", "Llama", "Kaiming", "Xavier", "Gaussian", "Hopper", "I"}


def as_belief(misconception: str) -> str:
    """ "You may be assuming that ..." around a misconception the bank states as a sentence. The
    first letter is lowered only for a plain capitalised word, never for code or a name
    (`F.mse_loss`, `PyTorch`, `LSTM`, `Adam`)."""
    text = misconception.strip()
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].isalpha() and first[1:].islower() and first not in _NAMES:
        text = text[0].lower() + text[1:]
    return f"You may be assuming that {text}"
