from django.contrib import admin

from .models import PlanItem, PlanSection, StudyPlan, Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "user",
        "question",
        "exercise_version",
        "status",
        "queue",
        "tries",
        "queued_at",
        "duration_ms",
    ]
    list_filter = ["status", "queue"]
    search_fields = ["user__username", "question__slug"]
    list_select_related = ["user", "question", "exercise_version"]
    readonly_fields = [f.name for f in Submission._meta.fields]

    def has_add_permission(self, request):
        return False


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
