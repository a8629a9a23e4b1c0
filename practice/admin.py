from django.contrib import admin

from .models import Submission


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
