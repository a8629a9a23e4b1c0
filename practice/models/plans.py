"""Study plans: curated, ordered tracks through the bank, kept as files in fixtures/plans/ and
loaded by `manage.py load_plans`; a learner starts one and the home page offers to continue it."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .learning import OwnedQuerySet


class StudyPlan(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=120)
    description = models.TextField()
    order = models.PositiveSmallIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["order", "title"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return f"/plans/{self.slug}/"


class PlanSection(models.Model):
    """A day or a chapter of a plan."""

    plan = models.ForeignKey(StudyPlan, on_delete=models.CASCADE, related_name="sections")
    order = models.PositiveSmallIntegerField()
    title = models.CharField(max_length=120)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["plan", "order"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "order"], name="plansection_unique_order"),
        ]

    def __str__(self) -> str:
        return f"{self.plan.title}: {self.title}"


class PlanItem(models.Model):
    section = models.ForeignKey(PlanSection, on_delete=models.CASCADE, related_name="items")
    question = models.ForeignKey("quizbank.Question", on_delete=models.CASCADE, related_name="+")
    order = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["section", "order"]
        constraints = [
            models.UniqueConstraint(fields=["section", "order"], name="planitem_unique_order"),
            models.UniqueConstraint(
                fields=["section", "question"], name="planitem_unique_question"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.section}: {self.question_id}"


class PlanEnrollment(models.Model):
    """A learner following a plan. Their progress through it is their progress on its questions."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plan_enrollments"
    )
    plan = models.ForeignKey(StudyPlan, on_delete=models.CASCADE, related_name="enrollments")
    started_at = models.DateTimeField(auto_now_add=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "plan"], name="enrollment_unique_plan"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} follows {self.plan_id}"
