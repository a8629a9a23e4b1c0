from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual

MAX_CODE_BYTES = 64 * 1024
MAX_OUTPUT_CHARS = 8 * 1024
MAX_TRIES = 3


class SubmissionQuerySet(models.QuerySet["Submission"]):
    def visible_to(self, user: Any) -> SubmissionQuerySet:
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

    class Queue(models.TextChoices):
        CPU = "cpu", "CPU"
        GPU = "gpu", "GPU"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions"
    )
    question = models.ForeignKey(
        "quizbank.Question", on_delete=models.CASCADE, related_name="submissions"
    )
    code = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    queue = models.CharField(max_length=3, choices=Queue.choices, default=Queue.CPU)
    message = models.TextField(blank=True, help_text="The overall outcome, or why it is waiting.")
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
