from typing import Any

from django.contrib import admin
from django.shortcuts import render

from grader import verification
from grader.jobs import JobError
from quizbank import admin as bank_admin
from quizbank.models import Question

from . import grader_client
from .models import PlanItem, PlanSection, StudyPlan, Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "user",
        "question",
        "status",
        "queue",
        "tries",
        "queued_at",
        "duration_ms",
    ]
    list_filter = ["status", "queue"]
    search_fields = ["user__username", "question__slug"]
    list_select_related = ["user", "question"]
    readonly_fields = [f.name for f in Submission._meta.fields]

    def has_add_permission(self, request):
        return False


class VerifyingQuestionAdmin(bank_admin.QuestionAdmin):
    """The bank's question admin, plus "Verify": grade the reference, the starter and every wrong
    solution in the sandbox and show each verdict, so curators can try an exercise before
    publishing it. (Grading is the learner app's; the content app only validates.)"""

    actions = [*bank_admin.QuestionAdmin.actions, "verify"]

    @admin.action(description="Verify the exercise: grade reference, starter and wrong solutions")
    def verify(self, request, queryset):
        reports = []
        for question in queryset.select_related("exercise").order_by("slug"):
            exercise = getattr(question, "exercise", None)
            report: dict[str, Any] = {"question": question, "files": [], "error": ""}
            if exercise is None:
                report["error"] = "This question has no code exercise."
            else:
                files = verification.exercise_files(
                    solution=exercise.solution_code,
                    starter=exercise.starter_code,
                    wrong=exercise.wrong_solutions,
                )
                try:
                    report["files"] = verification.verify_exercise(
                        lambda code, exercise=exercise: grader_client.grade(exercise, code), files
                    )
                except JobError as exc:
                    report["error"] = f"The grader refuses this exercise: {exc}"
            report["files"] = [(f, f.problem()) for f in report["files"]]
            report["ok"] = not report["error"] and all(p is None for _, p in report["files"])
            reports.append(report)
        context = {
            **self.admin_site.each_context(request),
            "title": "Verify exercises",
            "reports": reports,
            "opts": self.model._meta,
        }
        return render(request, "admin/quizbank/question/verify.html", context)


admin.site.unregister(Question)
admin.site.register(Question, VerifyingQuestionAdmin)


class PlanSectionInline(admin.TabularInline):
    model = PlanSection
    extra = 0
    fields = ["order", "title", "description", "questions"]
    readonly_fields = ["questions"]
    show_change_link = True  # a section's questions are edited on its own page

    @admin.display(description="Questions")
    def questions(self, section: PlanSection) -> str:
        return ", ".join(item.question.slug for item in section.items.all())

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("items__question")


@admin.register(StudyPlan)
class StudyPlanAdmin(admin.ModelAdmin):
    """Plans live in fixtures/plans/ and `export_plans` writes edits made here back there."""

    list_display = ["title", "slug", "order", "updated_at"]
    ordering = ["order", "title"]
    search_fields = ["slug", "title"]
    prepopulated_fields = {"slug": ["title"]}
    inlines = [PlanSectionInline]


class PlanItemInline(admin.TabularInline):
    model = PlanItem
    extra = 1
    autocomplete_fields = ["question"]


@admin.register(PlanSection)
class PlanSectionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "order"]
    list_select_related = ["plan"]
    search_fields = ["plan__title", "title"]
    inlines = [PlanItemInline]
