from django.contrib import admin, messages
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from .models import Application, Exercise, Hint, Question, QuickCheck, Topic


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "order"]
    list_editable = ["order"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(Application)
class ApplicationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}


class HintInline(admin.TabularInline):
    model = Hint
    extra = 0
    ordering = ["order"]


class QuickCheckInline(admin.StackedInline):
    model = QuickCheck
    extra = 0
    ordering = ["order"]


class ExerciseInline(admin.StackedInline):
    model = Exercise
    extra = 0
    max_num = 1
    fieldsets = [
        (None, {"fields": ["queue", "time_limit", "memory_limit_mb", "starter_code"]}),
        (
            "Grader only (never shown to learners)",
            {"fields": ["solution_code", "checks", "forbid", "wrong_solutions"]},
        ),
    ]


@admin.register(Question)
class QuestionAdmin(SimpleHistoryAdmin):
    list_display = ["title", "slug", "status", "difficulty", "kind", "primary_topic", "updated_at"]
    list_filter = ["status", "primary_topic", "topics", "difficulty", "kind", "applications"]
    search_fields = ["slug", "title", "prompt", "answer"]
    list_select_related = ["primary_topic"]
    prepopulated_fields = {"slug": ["title"]}
    filter_horizontal = ["topics", "applications"]
    readonly_fields = ["created_at", "updated_at", "published_at", "preview_link"]
    inlines = [HintInline, QuickCheckInline, ExerciseInline]
    actions = ["send_to_review", "publish", "archive"]
    fieldsets = [
        (None, {"fields": ["title", "slug", "status", "preview_link"]}),
        (
            "Classification",
            {"fields": ["difficulty", "kind", "primary_topic", "topics", "applications"]},
        ),
        ("Content", {"fields": ["prompt", "why_asked", "concepts", "answer"]}),
        (
            "People and dates",
            {"fields": ["author", "reviewer", "created_at", "updated_at", "published_at"]},
        ),
    ]

    def get_urls(self):
        preview = self.admin_site.admin_view(self.preview_view)
        return [
            path("<int:pk>/preview/", preview, name="quizbank_question_preview"),
            *super().get_urls(),
        ]

    def preview_view(self, request, pk):
        """The learner's page itself (staff see every status there), marked as a preview: hints,
        quick checks and the exercise with a working editor, exactly as learners will get them."""
        question = get_object_or_404(Question.objects.all(), pk=pk)
        return redirect(f"{question.get_absolute_url()}?preview=1")

    @admin.display(description="Preview")
    def preview_link(self, obj):
        if obj.pk is None:
            return "-"
        url = reverse("admin:quizbank_question_preview", args=[obj.pk])
        return format_html('<a href="{}" target="_blank">See it as a learner will</a>', url)

    def save_model(self, request, obj, form, change):
        if not change and obj.author is None:
            obj.author = request.user
        super().save_model(request, obj, form, change)

    @admin.action(description="Send to review")
    def send_to_review(self, request, queryset):
        for question in queryset:
            question.send_to_review()
        self.message_user(request, f"{len(queryset)} question(s) sent to review.", messages.SUCCESS)

    @admin.action(description="Publish")
    def publish(self, request, queryset):
        for question in queryset:
            question.publish(reviewer=request.user)
        self.message_user(request, f"{len(queryset)} question(s) published.", messages.SUCCESS)

    @admin.action(description="Archive")
    def archive(self, request, queryset):
        for question in queryset:
            question.archive()
        self.message_user(request, f"{len(queryset)} question(s) archived.", messages.SUCCESS)
