from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from accounts.models import Visitor
from grader import limits


class Topic(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=80)
    description = models.TextField(blank=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name


class Application(models.Model):
    """A real-world field where a question's concept matters (computer vision, NLP, ...)."""

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=80)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def choices_constraint(
    field: str, choices: type[models.Choices], name: str
) -> models.CheckConstraint:
    """The database's copy of a field's choices, written from its enum (quizbank/tests/
    test_constraints.py walks every `*_valid` constraint against its field's choices)."""
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name)


class QuestionQuerySet(models.QuerySet["Question"]):
    def published(self) -> QuestionQuerySet:
        return self.filter(status=Question.Status.PUBLISHED)

    def visible_to(self, user: Visitor) -> QuestionQuerySet:
        """The one permission rule for questions: learners see published ones, staff see all.
        What pages and the API read, so the derived columns (Question.DERIVED_FIELDS) are left
        out; a question saved from these rows still stores its own (they load when read)."""
        if user is not None and user.is_authenticated and user.is_staff:
            return self.defer(*Question.DERIVED_FIELDS)
        return self.published().defer(*Question.DERIVED_FIELDS)


class QuestionDifficulty(models.TextChoices):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


class QuestionKind(models.TextChoices):
    CONCEPT = "concept"
    CODE = "code"


class QuestionStatus(models.TextChoices):
    DRAFT = "draft"
    REVIEW = "review", "In review"
    PUBLISHED = "published"
    ARCHIVED = "archived"


class Question(models.Model):
    Difficulty = QuestionDifficulty
    Kind = QuestionKind
    Status = QuestionStatus

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    prompt = models.TextField()
    answer = models.TextField()
    why_asked = models.TextField("why it is asked")
    concepts = models.JSONField(
        default=list, help_text="The concepts tested, as a list of strings."
    )
    asked_as = models.JSONField(
        "asked as",
        default=list,
        blank=True,
        help_text="How a learner would search for it in their own words, one line each "
        "(search reads them beside the text).",
    )
    difficulty = models.CharField(max_length=10, choices=Difficulty.choices)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CONCEPT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    primary_topic = models.ForeignKey(
        Topic, on_delete=models.PROTECT, related_name="primary_questions"
    )
    topics = models.ManyToManyField(Topic, related_name="questions")
    applications = models.ManyToManyField(Application, related_name="questions", blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    published_at = models.DateTimeField(null=True, blank=True)
    # Maintained by a PostgreSQL trigger (migration 0003): what the question is about (title A,
    # prompt B, concepts C), kept small enough to stay inline, and the answer (D) on its own.
    search_vector = SearchVectorField(null=True, editable=False)
    answer_vector = SearchVectorField(null=True, editable=False)
    # What the question means (quizbank/search/semantic.py): the sentence encoder's embedding of
    # its title, concepts, prompt and the answer's first part, 384 float16; and the hash of the
    # text it was computed from, so an unchanged question is not encoded again. Null where the
    # encoder's files were not installed when it was saved (load_bank fills it in later).
    embedding = models.BinaryField(null=True, editable=False)
    embedding_key = models.CharField(max_length=64, blank=True, default="", editable=False)
    # Its words and how often each counts for BM25 (quizbank/search/bm25.py), computed when it is
    # saved, so that a process builds the BM25 index without splitting every question into words.
    bm25_words = models.JSONField(null=True, editable=False)
    # The embeddings of the passages that say what goes wrong (why it is asked, hints, common
    # mistakes, wrong solutions' misconceptions: semantic.symptom_texts), 384 float16 each, one
    # after another, and the hash of those passages. Null until computed: a save clears them, as
    # the hints and the exercise they are read from are saved after the question.
    symptom_embeddings = models.BinaryField(null=True, editable=False)
    symptom_key = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The hash of what load_bank last imported for this question (its canonical record): a row
    # whose content hashes otherwise was edited in the admin since, and load_bank keeps it.
    bank_digest = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The hash of the question's files (and taxonomy) as load_bank last read them: when no file
    # changed, a load need not read, validate or compare any of them again.
    bank_files_digest = models.CharField(max_length=64, blank=True, default="", editable=False)

    # What the project derives from a question and stores with it, for search and for load_bank: no
    # page shows it, and its history leaves it out. A question's symptom passages' embeddings alone
    # are 17 kB a row (TOASTed); a list or page that read them fetched and decoded them for nothing.
    DERIVED_FIELDS = (
        "search_vector",
        "answer_vector",
        "embedding",
        "embedding_key",
        "bm25_words",
        "symptom_embeddings",
        "symptom_key",
        "bank_digest",
        "bank_files_digest",
    )
    history = HistoricalRecords(excluded_fields=list(DERIVED_FIELDS))
    objects = QuestionQuerySet.as_manager()

    class Meta:
        ordering = ["primary_topic__order", "slug"]
        constraints = [
            choices_constraint("difficulty", QuestionDifficulty, "question_difficulty_valid"),
            choices_constraint("kind", QuestionKind, "question_kind_valid"),
            choices_constraint("status", QuestionStatus, "question_status_valid"),
        ]
        indexes = [models.Index(fields=["status", "difficulty"])]

    def __str__(self) -> str:
        return self.title

    def save(self, *args: Any, **kwargs: Any) -> None:
        fields = kwargs.get("update_fields")
        if fields is None or {"title", "concepts", "prompt", "answer", "slug", "asked_as"} & set(
            fields
        ):
            from .search import bm25, semantic

            semantic.refresh(self)
            bm25.refresh(self)
            if fields is not None:
                kwargs["update_fields"] = {*fields, "embedding", "embedding_key", "bm25_words"}
        fields = kwargs.get("update_fields")
        if fields is None or {"why_asked", "answer", "asked_as"} & set(fields):
            from .search import semantic

            semantic.forget_symptoms(self)
            if fields is not None:
                kwargs["update_fields"] = {*fields, "symptom_embeddings", "symptom_key"}
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        # The question page is a public, stable URL; the learner app serves it.
        return f"/questions/{self.slug}/"

    def clean(self) -> None:
        if not isinstance(self.concepts, list) or not all(
            isinstance(c, str) for c in self.concepts
        ):
            raise ValidationError({"concepts": "Must be a list of strings."})
        from .bank.schema import asked_as_errors

        if not isinstance(self.asked_as, list):
            raise ValidationError({"asked_as": "Must be a list of strings."})
        problems = asked_as_errors(self.asked_as)
        if problems:
            raise ValidationError({"asked_as": [f"{at}: {reason}" for at, reason in problems]})

    def send_to_review(self) -> None:
        self.status = self.Status.REVIEW
        self.save(update_fields=["status", "updated_at"])

    def publish(self, *, reviewer: Any = None) -> None:
        self.status = self.Status.PUBLISHED
        self.published_at = self.published_at or timezone.now()
        if reviewer is not None:
            self.reviewer = reviewer
        self.save(update_fields=["status", "published_at", "reviewer", "updated_at"])

    def archive(self) -> None:
        self.status = self.Status.ARCHIVED
        self.save(update_fields=["status", "updated_at"])


class Hint(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="hints")
    order = models.PositiveSmallIntegerField()
    text = models.TextField()

    history = HistoricalRecords()

    class Meta:
        ordering = ["question", "order"]
        constraints = [
            models.UniqueConstraint(fields=["question", "order"], name="hint_unique_order"),
        ]

    def __str__(self) -> str:
        return f"Hint {self.order} for {self.question_id}"


class QuickCheckKind(models.TextChoices):
    SINGLE = "single", "Single choice"
    MULTIPLE = "multiple", "Multiple choice"
    PREDICT = "predict", "Predict the output"


class QuickCheck(models.Model):
    """An auto-graded check of understanding. Learners never get `answer` before answering."""

    Kind = QuickCheckKind

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="quick_checks")
    order = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    prompt = models.TextField()
    choices = models.JSONField(default=list, blank=True)
    answer = models.JSONField(
        help_text="single: an index; multiple: a list of indices; predict: text"
    )
    explanation = models.TextField()

    history = HistoricalRecords()

    class Meta:
        ordering = ["question", "order"]
        constraints = [
            models.UniqueConstraint(fields=["question", "order"], name="quickcheck_unique_order"),
            choices_constraint("kind", QuickCheckKind, "quickcheck_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"Quick check {self.order} for {self.question_id}"

    def clean(self) -> None:
        from .bank.schema import quick_check_errors

        errors = quick_check_errors(
            {"kind": self.kind, "choices": self.choices, "answer": self.answer}, check_text=False
        )
        if errors:
            raise ValidationError({field: reason for field, reason in errors})

    def is_correct(self, response: Any) -> bool:
        if self.kind == self.Kind.SINGLE:
            return (
                isinstance(response, int)
                and not isinstance(response, bool)
                and response == self.answer
            )
        if self.kind == self.Kind.MULTIPLE:
            if not isinstance(response, list) or not all(isinstance(i, int) for i in response):
                return False
            return sorted(set(response)) == sorted(self.answer)
        return isinstance(response, str) and " ".join(response.split()) == " ".join(
            str(self.answer).split()
        )


class Queue(models.TextChoices):
    """Where an exercise is graded; the grader's `limits.QUEUES` (a test pins that they agree)."""

    CPU = "cpu", "CPU"
    GPU = "gpu", "GPU"


# The permission the admin's Verify needs (it runs an exercise's code in the grader).
VERIFY_PERMISSION = "verify_exercise"


class Exercise(models.Model):
    """The code part of a code question. `checks`, `solution_code` and `wrong_solutions` are for the
    grader and staff only: no learner-facing serializer or template may read them.

    Limits come from `grader.limits`, so the database refuses what the grader would refuse."""

    Queue = Queue

    question = models.OneToOneField(Question, on_delete=models.CASCADE, related_name="exercise")
    queue = models.CharField(max_length=3, choices=Queue.choices, default=Queue.CPU)
    starter_code = models.TextField()
    solution_code = models.TextField()
    checks = models.JSONField(default=list)
    forbid = models.JSONField(default=list, blank=True)
    wrong_solutions = models.JSONField(
        default=dict,
        blank=True,
        help_text="Plausible wrong solutions by name; verify_bank proves they fail.",
    )
    mutant_waivers = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "Mechanical mutants of the reference that are equivalent to it, by id, each with a "
            "one-line reason; verify_bank proves every other mutant fails."
        ),
    )
    time_limit = models.FloatField(
        default=limits.DEFAULT_TIME_LIMIT,
        help_text=(
            f"The most seconds of wall time a submission may take (at most "
            f"{limits.MAX_TIME_LIMIT:g}); learners get {limits.TIME_LIMIT_FACTOR:g}x the "
            f"reference solution's measured time, at least {limits.TIME_LIMIT_FLOOR:g} s, "
            "up to this."
        ),
    )
    # The reference solution's run as the grader measured it, and for which reference and checks
    # (a digest): an edit of either makes the measurement stale, and the ceiling applies until the
    # grader measures again. Written by the grader client, never by hand.
    reference_seconds = models.FloatField(null=True, blank=True, editable=False)
    reference_digest = models.CharField(max_length=64, blank=True, editable=False)
    memory_limit_mb = models.PositiveIntegerField(
        default=limits.DEFAULT_MEMORY_MB,
        help_text=f"From {limits.MIN_MEMORY_MB} to {limits.MAX_MEMORY_MB} MiB.",
    )

    # The last time the grader found this exercise itself at fault while grading a learner's
    # code (the attempt was not counted), and why: the admin lists exercises with recent faults.
    fault_at = models.DateTimeField(null=True, blank=True, editable=False)
    fault = models.TextField(blank=True, editable=False)

    history = HistoricalRecords(excluded_fields=["fault_at", "fault"])

    class Meta:
        permissions = [(VERIFY_PERMISSION, "Can verify exercises in the grader")]
        constraints = [
            models.CheckConstraint(
                condition=Q(queue__in=limits.QUEUES), name="exercise_queue_valid"
            ),
            models.CheckConstraint(
                condition=Q(time_limit__gt=0, time_limit__lte=limits.MAX_TIME_LIMIT),
                name="exercise_time_limit_range",
            ),
            models.CheckConstraint(
                condition=Q(
                    memory_limit_mb__gte=limits.MIN_MEMORY_MB,
                    memory_limit_mb__lte=limits.MAX_MEMORY_MB,
                ),
                name="exercise_memory_limit_range",
            ),
        ]

    def __str__(self) -> str:
        return f"Exercise for {self.question_id}"

    @property
    def content_digest(self) -> str:
        """What the reference's measured time depends on: the reference and the checks."""
        content = json.dumps([self.solution_code, self.checks], sort_keys=True)
        return hashlib.sha256(content.encode()).hexdigest()

    @property
    def fitted_time_limit(self) -> float:
        """The time limit a submission runs under, as learners are told it (grader.limits)."""
        measured = self.reference_seconds
        if self.reference_digest != self.content_digest:
            measured = None
        return limits.fitted_time_limit(measured, self.time_limit)

    @property
    def time_limit_fitted(self) -> bool:
        return self.fitted_time_limit < self.time_limit

    @property
    def time_limit_rule(self) -> str:
        return (
            f"{limits.TIME_LIMIT_FACTOR:g} times what the reference solution takes, "
            f"at least {limits.TIME_LIMIT_FLOOR:g} s"
        )

    def record_reference_time(self, seconds: float, *, digest: str | None = None) -> None:
        """Store the grader's measurement of the reference, once per reference and checks, so
        the limit a learner is told stays put between submissions. `digest`: of the version
        measured, when it is not the exercise as edited now."""
        digest = digest or self.content_digest
        if self.reference_digest == digest and self.reference_seconds is not None:
            return
        Exercise.objects.filter(pk=self.pk).exclude(
            reference_digest=digest, reference_seconds__isnull=False
        ).update(reference_seconds=seconds, reference_digest=digest)
        self.reference_seconds, self.reference_digest = seconds, digest

    def graded_content(self) -> dict[str, Any]:
        """What the grader grades against, as edited now: a version's copy of it."""
        return {name: getattr(self, name) for name in GRADED_FIELDS}

    @property
    def latest_version(self) -> ExerciseVersion | None:
        return self.versions.order_by("-number").first()

    @property
    def live_version(self) -> ExerciseVersion | None:
        """The version learners are graded against: the newest one the grader verified."""
        verified = self.versions.filter(state=ExerciseVersion.State.VERIFIED)
        return verified.order_by("-number").first()

    def version_for(self, user: Visitor) -> ExerciseVersion | None:
        """The version `user` sees and is graded against: the live one for learners; the newest,
        verified or not, for staff (so "See it as a learner will" works on an edit before the
        grader has verified it)."""
        if user is not None and user.is_authenticated and user.is_staff:
            return self.latest_version
        return self.live_version

    def shown_to(self, user: Visitor) -> Exercise | ExerciseVersion:
        """What the exercise's page shows `user` (starter code, examples, time limit): the
        version they are graded against, or the exercise itself before it has any."""
        return self.version_for(user) or self

    def version_create(self, *, by: Any = None, verified: bool = False) -> ExerciseVersion | None:
        """A new version holding the exercise as edited now, to be verified by the grader (or,
        `verified`, already verified elsewhere: a bank import, which CI's verify_bank proved).
        None when the newest version already holds exactly this content."""
        content = self.graded_content()
        latest = self.latest_version
        if latest is not None and latest.graded_content() == content:
            if verified and latest.state != ExerciseVersion.State.VERIFIED:
                latest.verification_finish(reasons=[])
            return None
        state = ExerciseVersion.State.VERIFIED if verified else ExerciseVersion.State.VERIFYING
        return ExerciseVersion.objects.create(
            exercise=self,
            number=(latest.number + 1) if latest else 1,
            state=state,
            verified_at=timezone.now() if verified else None,
            created_by=by,
            **content,
        )

    def record_fault(self, reason: str, *, now: Any = None) -> None:
        """The grader found this exercise broken while grading a learner's code: keep the reason
        for the staff (the admin's "grader errors" filter and column)."""
        self.fault_at, self.fault = now or timezone.now(), reason
        Exercise.objects.filter(pk=self.pk).update(fault_at=self.fault_at, fault=reason)

    @property
    def visible_checks(self) -> list[dict[str, Any]]:
        return [
            {"name": c["name"], "code": c["code"]} for c in self.checks if c.get("visible", False)
        ]


# The fields of an exercise that decide a verdict: each version keeps its own copy of them.
GRADED_FIELDS = (
    "queue",
    "time_limit",
    "memory_limit_mb",
    "starter_code",
    "solution_code",
    "checks",
    "forbid",
    "wrong_solutions",
    "mutant_waivers",
)


class ExerciseVersionState(models.TextChoices):
    VERIFYING = "verifying", "Verifying in the grader"
    VERIFIED = "verified", "Verified"
    FAILED = "failed", "Failed verification"


class ExerciseVersion(models.Model):
    """One edit of an exercise, as the grader grades it. Learners are graded against the newest
    verified version (`Exercise.live_version`); a new one goes live once the grader verified it
    on a worker: the reference passes, the starter and every wrong solution fail (each diagnosed
    as itself), the forbid list does not refuse the reference, and a check is visible."""

    State = ExerciseVersionState

    exercise = models.ForeignKey(Exercise, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    queue = models.CharField(max_length=3, choices=Queue.choices, default=Queue.CPU)
    time_limit = models.FloatField(default=limits.DEFAULT_TIME_LIMIT)
    memory_limit_mb = models.PositiveIntegerField(default=limits.DEFAULT_MEMORY_MB)
    starter_code = models.TextField()
    solution_code = models.TextField()
    checks = models.JSONField(default=list)
    forbid = models.JSONField(default=list, blank=True)
    wrong_solutions = models.JSONField(default=dict, blank=True)
    mutant_waivers = models.JSONField(default=dict, blank=True)
    state = models.CharField(
        max_length=10, choices=ExerciseVersionState.choices, default=State.VERIFYING
    )
    # Why verification failed, one "file: reason" each; and what it is doing while it runs.
    reasons = models.JSONField(default=list, blank=True)
    progress = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["exercise", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["exercise", "number"], name="exerciseversion_unique_number"
            ),
            choices_constraint("state", ExerciseVersionState, "exerciseversion_state_valid"),
            models.CheckConstraint(
                condition=Q(queue__in=limits.QUEUES), name="exerciseversion_queue_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"Version {self.number} of exercise {self.exercise_id}"

    def graded_content(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in GRADED_FIELDS}

    @property
    def question(self) -> Question:
        return self.exercise.question

    @property
    def content_digest(self) -> str:
        content = json.dumps([self.solution_code, self.checks], sort_keys=True)
        return hashlib.sha256(content.encode()).hexdigest()

    @property
    def fitted_time_limit(self) -> float:
        exercise = self.exercise
        measured = exercise.reference_seconds
        if exercise.reference_digest != self.content_digest:
            measured = None
        return limits.fitted_time_limit(measured, self.time_limit)

    @property
    def time_limit_fitted(self) -> bool:
        return self.fitted_time_limit < self.time_limit

    @property
    def time_limit_rule(self) -> str:
        return self.exercise.time_limit_rule

    @property
    def visible_checks(self) -> list[dict[str, Any]]:
        return [
            {"name": c["name"], "code": c["code"]} for c in self.checks if c.get("visible", False)
        ]

    def record_reference_time(self, seconds: float) -> None:
        self.exercise.record_reference_time(seconds, digest=self.content_digest)

    def verification_progress(self, text: str) -> None:
        self.progress = text[:200]
        ExerciseVersion.objects.filter(pk=self.pk).update(progress=self.progress)

    def verification_finish(self, *, reasons: list[str], now: Any = None) -> None:
        """The grader's answer: verified when it found no reason against, else failed."""
        self.state = self.State.FAILED if reasons else self.State.VERIFIED
        self.reasons = reasons
        self.progress = ""
        self.verified_at = now or timezone.now()
        self.save(update_fields=["state", "reasons", "progress", "verified_at"])

    def verification_restart(self) -> None:
        """Verify again (the admin's Verify). A verified version stays live meanwhile (and stays
        verified unless the grader now finds a reason against it)."""
        if self.state != self.State.VERIFIED:
            self.state, self.reasons, self.verified_at = self.State.VERIFYING, [], None
        self.progress = "waiting for a grader worker"
        self.save(update_fields=["state", "reasons", "progress", "verified_at"])
