from datetime import timedelta
from itertools import chain
from typing import Any

import yaml
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.forms.fields import InvalidJSONInput
from django.http import JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.module_loading import import_string
from simple_history.admin import SimpleHistoryAdmin

from .bank.files import dump_yaml, parse_yaml
from .bank.schema import exercise_errors
from .models import VERIFY_PERMISSION, Application, Exercise, Hint, Question, QuickCheck, Topic


def _lf(value: Any) -> Any:
    return value.replace("\r\n", "\n").replace("\r", "\n") if isinstance(value, str) else value


def _lf_data(data: Any) -> Any:
    if isinstance(data, QueryDict):
        copy = data.copy()
        for key in copy:
            copy.setlist(key, [_lf(v) for v in data.getlist(key)])
        return copy
    return {key: _lf(value) for key, value in data.items()}


class CurationForm(forms.ModelForm):
    """Browsers send a text area's lines with CRLF; the bank's files use LF. And a form field strips
    the trailing newline the bank's text keeps. Without this, every save in the admin would rewrite
    text, and the history would show changes nobody made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.is_bound:
            # Normalised before anything reads it, has_changed() included: text sent back
            # unchanged must compare equal, or every save would write history nobody made.
            self.data = _lf_data(self.data)
        for field in self.fields.values():
            if isinstance(field, forms.CharField) and isinstance(field.widget, forms.Textarea):
                field.strip = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name, value in cleaned.items():
            if isinstance(value, str):
                cleaned[name] = value.replace("\r\n", "\n").replace("\r", "\n")
        return cleaned


class YAMLField(forms.JSONField):
    """A JSON field edited as YAML, written as the bank's files write it (block lists, code as
    literal blocks), so a curator reads and edits checks, choices and concepts as they appear in
    fixtures/bank/ rather than as one line of escaped JSON. Invalid YAML is refused with its line;
    `texts=True` also requires a list of texts."""

    widget = forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "class": "vLargeTextField"})

    def __init__(self, *, texts: bool = False, **kwargs: Any) -> None:
        self.texts = texts
        # Compared with the stored value, not with a hidden copy of the initial one (which Django
        # adds for a callable default): a form posted without that copy would otherwise count as
        # changed, and write history for an edit nobody made.
        kwargs["show_hidden_initial"] = False
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        if self.disabled or not isinstance(value, str):
            return value
        if not value.strip():
            return None
        try:
            data = parse_yaml(value)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            where = f"line {mark.line + 1}: " if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise ValidationError(f"{where}invalid YAML: {problem}", code="invalid") from exc
        if self.texts and not (isinstance(data, list) and all(isinstance(v, str) for v in data)):
            raise ValidationError("must be a list of texts, one “- ” line each", code="invalid")
        return data

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled or data is None:
            return initial if self.disabled else None
        try:
            return parse_yaml(data)
        except yaml.YAMLError:
            return InvalidJSONInput(data)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, InvalidJSONInput) or value is None:
            return value or ""
        return dump_yaml(value).removesuffix("...\n")

    def has_changed(self, initial: Any, data: Any) -> bool:
        if isinstance(data, str) and not data.strip() and initial in (None, [], {}):
            return False  # an empty box over an empty default (a new inline left blank)
        try:
            return self.to_python(data) != initial
        except ValidationError:
            return True


def _yaml_formfield(db_field: Any, **kwargs: Any) -> forms.Field:
    texts = db_field.name in ("concepts", "choices", "asked_as")
    return db_field.formfield(form_class=YAMLField, texts=texts, **kwargs)


class YAMLFieldsMixin:
    """Every JSON field of the bank's models is edited as YAML."""

    def formfield_for_dbfield(self, db_field: Any, request: Any, **kwargs: Any) -> Any:
        if isinstance(db_field, models.JSONField):
            return _yaml_formfield(db_field, **kwargs)
        return super().formfield_for_dbfield(db_field, request, **kwargs)  # type: ignore[misc]


# Where the bank schema's error for a file or key belongs on the exercise form.
EXERCISE_ERROR_FIELDS = {
    "starter.py": "starter_code",
    "solution.py": "solution_code",
    "wrong/": "wrong_solutions",
    "exercise.yaml: queue": "queue",
    "exercise.yaml: time_limit": "time_limit",
    "exercise.yaml: memory_limit_mb": "memory_limit_mb",
    "exercise.yaml: forbid": "forbid",
    "exercise.yaml: checks": "checks",
    "exercise.yaml": "checks",  # the grader's own validation of the job
}


def _reason_field(reason: str) -> str:
    """The form field a verification reason is about ("wrong/adds.py: ..." -> wrong_solutions)."""
    if reason.startswith("checks:"):
        return "checks"
    return next(
        (f for prefix, f in EXERCISE_ERROR_FIELDS.items() if reason.startswith(prefix)), "checks"
    )


class ExerciseForm(CurationForm):
    """An exercise is validated on save exactly as load_bank validates exercise.yaml and the code
    files (ending with the grader's own job validation), so curators cannot save one that every
    submission would then fail on."""

    class Meta:
        model = Exercise
        fields = [
            "queue",
            "time_limit",
            "memory_limit_mb",
            "starter_code",
            "solution_code",
            "checks",
            "forbid",
            "wrong_solutions",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self._show_verification_failures()

    def _show_verification_failures(self) -> None:
        """The reasons the newest version failed verification, beside the fields they are about."""
        latest = self.instance.latest_version
        if latest is None or latest.state != latest.State.FAILED:
            return
        for reason in latest.reasons:
            name = _reason_field(reason)
            field = self.fields.get(name)
            if field is None:
                continue
            note = format_html(
                '<strong class="verification-failed">Version {} failed verification: {}</strong>',
                latest.number,
                reason,
            )
            field.help_text = format_html("{}<br>{}", note, field.help_text or "")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        meta: dict[str, Any] = {
            "queue": cleaned.get("queue"),
            "checks": cleaned.get("checks"),
            "time_limit": cleaned.get("time_limit"),
            "memory_limit_mb": cleaned.get("memory_limit_mb"),
            "forbid": cleaned.get("forbid") or [],
        }
        record = {
            "meta": meta,
            "starter_code": cleaned.get("starter_code"),
            "solution_code": cleaned.get("solution_code"),
            "wrong_solutions": cleaned.get("wrong_solutions") or {},
        }
        if not isinstance(record["wrong_solutions"], dict):
            self.add_error("wrong_solutions", "must be a mapping of name to code")
            return cleaned
        for where, reason in exercise_errors(record):
            field = next(
                (f for prefix, f in EXERCISE_ERROR_FIELDS.items() if where.startswith(prefix)),
                None,
            )
            self.add_error(field, f"{where}: {reason}")
        return cleaned


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
    form = CurationForm
    extra = 0
    ordering = ["order"]


class QuickCheckInline(YAMLFieldsMixin, admin.StackedInline):
    model = QuickCheck
    form = CurationForm
    extra = 0
    ordering = ["order"]


def version_summary(exercise: Exercise) -> str:
    """The newest version's state for curators, and which version learners get meanwhile."""
    latest, live = exercise.latest_version, exercise.live_version
    if latest is None:
        return "No version yet: save the exercise or press Verify."
    text = f"Version {latest.number}: {latest.get_state_display().lower()}"
    if latest.state == latest.State.VERIFYING and latest.progress:
        text += f" ({latest.progress})"
    if latest.state == latest.State.FAILED:
        text += ". " + " ".join(f"{reason}." for reason in latest.reasons)
    if live is None:
        text += ". Learners get no version yet: none is verified."
    elif live.pk != latest.pk:
        text += f". Learners get version {live.number} until this one is verified."
    else:
        text += ". Learners get this version."
    return text


class ExerciseInline(YAMLFieldsMixin, admin.StackedInline):
    model = Exercise
    form = ExerciseForm
    extra = 0
    max_num = 1
    readonly_fields = ["version_state", "learners_time_limit"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "version_state",
                    "queue",
                    "time_limit",
                    "learners_time_limit",
                    "memory_limit_mb",
                    "starter_code",
                ]
            },
        ),
        (
            "Grader only (never shown to learners)",
            {"fields": ["solution_code", "checks", "forbid", "wrong_solutions"]},
        ),
    ]

    @admin.display(description="Version")
    def version_state(self, exercise: Exercise) -> str:
        if exercise.pk is None:
            return "-"
        latest = exercise.latest_version
        return format_html(
            '<div id="exercise-version" data-url="{}" data-state="{}">{}</div>',
            reverse("admin:quizbank_question_version_state", args=[exercise.question_id]),
            latest.state if latest else "",
            version_summary(exercise),
        )

    @admin.display(description="Learners' time limit")
    def learners_time_limit(self, exercise: Exercise) -> str:
        if exercise.pk is None:
            return "-"
        limit = f"{exercise.fitted_time_limit:g} s"
        measured = exercise.reference_seconds
        if measured is None or exercise.reference_digest != exercise.content_digest:
            return f"{limit}: the time limit above until the grader measures the reference"
        rule = exercise.time_limit_rule
        return f"{limit}: {rule}, up to the limit above (it took {measured:.3f} s)"


# How long an exercise's grader error stays "recent" in the admin.
RECENT_FAULT = timedelta(days=7)


class GraderErrorFilter(admin.SimpleListFilter):
    """Exercises the grader found broken while grading learners' code (their attempts were not
    counted): what the staff must fix first."""

    title = "grader errors"
    parameter_name = "grader_errors"

    def lookups(self, request, model_admin):
        return [("recent", "In the last 7 days"), ("ever", "Ever")]

    def queryset(self, request, queryset):
        if self.value() == "recent":
            return queryset.filter(exercise__fault_at__gte=timezone.now() - RECENT_FAULT)
        if self.value() == "ever":
            return queryset.filter(exercise__fault_at__isnull=False)
        return queryset


class QuestionChangeList(ChangeList):
    """The question list, its rows read without what search and load_bank store with each
    (Question.DERIVED_FIELDS: 17 kB of embeddings a row). The change page reads the whole row."""

    def get_queryset(self, request, exclude_parameters=None):
        return super().get_queryset(request, exclude_parameters).defer(*Question.DERIVED_FIELDS)


@admin.register(Question)
class QuestionAdmin(YAMLFieldsMixin, SimpleHistoryAdmin):
    list_display = [
        "title",
        "slug",
        "status",
        "difficulty",
        "kind",
        "primary_topic",
        "updated_at",
        "grader_error",
    ]
    ordering = ["-updated_at"]  # what a curator just worked on comes first
    list_filter = [
        "status",
        GraderErrorFilter,
        "primary_topic",
        "topics",
        "difficulty",
        "kind",
        "applications",
    ]
    search_fields = ["slug", "title", "prompt", "answer"]
    list_select_related = ["primary_topic", "exercise"]
    prepopulated_fields = {"slug": ["title"]}
    filter_horizontal = ["topics", "applications"]
    readonly_fields = ["created_at", "updated_at", "published_at", "preview_link"]
    form = CurationForm
    inlines = [HintInline, QuickCheckInline, ExerciseInline]
    object_history_template = "admin/quizbank/question/object_history.html"

    class Media:
        js = ["js/admin_version_state.js"]  # the exercise's version state, live

    actions = ["send_to_review", "publish", "archive", "verify"]
    fieldsets = [
        (None, {"fields": ["title", "slug", "status", "preview_link"]}),
        (
            "Classification",
            {"fields": ["difficulty", "kind", "primary_topic", "topics", "applications"]},
        ),
        ("Content", {"fields": ["prompt", "why_asked", "concepts", "answer"]}),
        ("Search", {"fields": ["asked_as"]}),
        (
            "People and dates",
            {"fields": ["author", "reviewer", "created_at", "updated_at", "published_at"]},
        ),
    ]

    def get_changelist(self, request, **kwargs):
        return QuestionChangeList

    def changelist_view(self, request, extra_context=None):
        """An action this account is not offered is refused outright (403), not ignored."""
        action = request.POST.get("action") if request.method == "POST" else None
        if action and action not in self.get_actions(request):
            raise PermissionDenied(f"You may not {action.replace('_', ' ')} questions.")
        return super().changelist_view(request, extra_context)

    def has_verify_permission(self, request) -> bool:
        """Verify runs exercise code in the grader: its own permission, not `change`."""
        return request.user.has_perm(f"quizbank.{VERIFY_PERMISSION}")

    def get_urls(self):
        preview = self.admin_site.admin_view(self.preview_view)
        state = self.admin_site.admin_view(self.version_state_view)
        return [
            path("<int:pk>/preview/", preview, name="quizbank_question_preview"),
            path("<int:pk>/version-state/", state, name="quizbank_question_version_state"),
            *super().get_urls(),
        ]

    def history_view(self, request, object_id, extra_context=None):
        """The question's history, followed by the history of its hints, quick checks and
        exercise, newest first: an edit to any part of a question shows here."""
        question = get_object_or_404(Question.objects.all(), pk=object_id)
        records = chain(
            (("Hint", r) for r in Hint.history.filter(question_id=question.pk)),
            (("Quick check", r) for r in QuickCheck.history.filter(question_id=question.pk)),
            (("Exercise", r) for r in Exercise.history.filter(question_id=question.pk)),
        )
        parts = sorted(
            (
                {
                    "date": record.history_date,
                    "part": f"{label} {getattr(record, 'order', '')}".strip(),
                    "change": record.get_history_type_display(),
                    "user": record.history_user,
                }
                for label, record in records
            ),
            key=lambda row: row["date"],
            reverse=True,
        )
        extra_context = {**(extra_context or {}), "part_history": parts}
        return super().history_view(request, object_id, extra_context=extra_context)

    def version_state_view(self, request, pk):
        """The exercise's version state as the change page polls it while the grader verifies."""
        question = get_object_or_404(Question.objects.all(), pk=pk)
        if not self.has_view_or_change_permission(request, question):
            raise PermissionDenied
        exercise = get_object_or_404(Exercise.objects.all(), question=question)
        latest = exercise.latest_version
        return JsonResponse(
            {
                "state": latest.state if latest else None,
                "number": latest.number if latest else None,
                "reasons": latest.reasons if latest else [],
                "text": version_summary(exercise),
            }
        )

    def save_related(self, request, form, formsets, change):
        """An edit of the exercise becomes a new version, verified by the grader on a worker;
        learners keep the verified one until then."""
        super().save_related(request, form, formsets, change)
        exercise = Exercise.objects.filter(question=form.instance).first()
        if exercise is None:
            return
        version = exercise.version_create(by=request.user)
        if version is not None:
            import_string(settings.EXERCISE_VERIFICATION)(version.pk)
            self.message_user(
                request,
                f"The exercise's edit is version {version.number}; the grader is verifying it. "
                "Learners keep the last verified version until then.",
                messages.INFO,
            )

    def preview_view(self, request, pk):
        """The learner's page itself (staff see every status there), marked as a preview: hints,
        quick checks and the exercise with a working editor, exactly as learners will get them."""
        question = get_object_or_404(Question.objects.all(), pk=pk)
        return redirect(f"{question.get_absolute_url()}?preview=1")

    @admin.display(description="Recent grader error")
    def grader_error(self, obj: Question) -> str:
        exercise = getattr(obj, "exercise", None)
        if exercise is None or exercise.fault_at is None:
            return "-"
        if exercise.fault_at < timezone.now() - RECENT_FAULT:
            return "-"
        return f"{exercise.fault_at:%Y-%m-%d %H:%M}: {exercise.fault[:200]}"

    @admin.display(description="Preview")
    def preview_link(self, obj):
        if obj.pk is None:
            return "-"
        url = reverse("admin:quizbank_question_preview", args=[obj.pk])
        return format_html('<a href="{}" target="_blank">See it as a learner will</a>', url)

    def save_model(self, request, obj, form, change):
        if change and not form.has_changed():
            return  # nothing to write: no history entry, no new updated_at
        if not change and obj.author is None:
            obj.author = request.user
        super().save_model(request, obj, form, change)

    @admin.action(description="Send to review", permissions=["change"])
    def send_to_review(self, request, queryset):
        for question in queryset:
            question.send_to_review()
        self.message_user(request, f"{len(queryset)} question(s) sent to review.", messages.SUCCESS)

    @admin.action(description="Publish", permissions=["change"])
    def publish(self, request, queryset):
        for question in queryset:
            question.publish(reviewer=request.user)
        self.message_user(request, f"{len(queryset)} question(s) published.", messages.SUCCESS)

    @admin.action(description="Archive", permissions=["change"])
    def archive(self, request, queryset):
        for question in queryset:
            question.archive()
        self.message_user(request, f"{len(queryset)} question(s) archived.", messages.SUCCESS)

    @admin.action(
        description="Verify the exercise: grade reference, starter and wrong solutions",
        permissions=["verify"],
    )
    def verify(self, request, queryset):
        """Send each selected exercise's newest version (a new one if it was edited since) to a
        grader worker for verification; the question's page shows the result when it lands.
        Grading is the learner app's: settings.EXERCISE_VERIFICATION names the function that
        sends it (this app imports nothing of it)."""
        send = import_string(settings.EXERCISE_VERIFICATION)
        sent = []
        for question in queryset.select_related("exercise").order_by("slug"):
            exercise = getattr(question, "exercise", None)
            if exercise is None:
                continue
            version = exercise.version_create(by=request.user) or exercise.latest_version
            if version is None:
                continue
            version.verification_restart()
            send(version.pk)
            sent.append(f"{question.slug} (version {version.number})")
        if sent:
            self.message_user(
                request,
                f"Sent to the grader for verification: {', '.join(sent)}. Each question's page "
                "shows the result when it lands.",
                messages.SUCCESS,
            )
        else:
            self.message_user(request, "None of these questions has an exercise.", messages.WARNING)
