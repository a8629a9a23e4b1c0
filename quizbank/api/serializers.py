"""What learners may see of the bank. Hidden checks, reference solutions, wrong solutions and the
answers of quick checks have no field here, by design: nothing in this module reads them."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..caching import Tags, bank_tags
from ..models import Application, Exercise, ExerciseVersion, Question, QuickCheck, Topic
from ..search import question_search_fields


class TopicSerializer(serializers.ModelSerializer):
    question_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Topic
        fields = ["slug", "name", "description", "order", "question_count"]


class ApplicationSerializer(serializers.ModelSerializer):
    question_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Application
        fields = ["slug", "name", "question_count"]


SLUGS = serializers.ListField(child=serializers.SlugField())


class QuestionListSerializer(serializers.ModelSerializer):
    """A row of the list (`selectors.question_rows`): its topics and applications are read from
    the ids the row carries, by the cached taxonomy."""

    topics = serializers.SerializerMethodField(help_text="Slugs, in syllabus order.")
    applications = serializers.SerializerMethodField(help_text="Slugs, by name.")
    primary_topic: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        read_only=True, slug_field="slug"
    )
    url = serializers.SerializerMethodField(help_text="The question's own URL in this API.")
    title_html = serializers.SerializerMethodField(
        help_text="The title as safe HTML, the words of `search` in <mark>."
    )
    snippet = serializers.SerializerMethodField(
        help_text="With `search`: the prompt's sentence that matched, as safe HTML with the words"
        " in <mark>; empty otherwise."
    )

    class Meta:
        model = Question
        fields = [
            "slug",
            "title",
            "title_html",
            "snippet",
            "difficulty",
            "kind",
            "primary_topic",
            "topics",
            "applications",
            "status",
            "url",
        ]

    @extend_schema_field(SLUGS)
    def get_topics(self, question: Question) -> list[str]:
        return self._tags(Topic).slugs_of(question.topic_ids)  # type: ignore[attr-defined]

    @extend_schema_field(SLUGS)
    def get_applications(self, question: Question) -> list[str]:
        return self._tags(Application).slugs_of(question.application_ids)  # type: ignore[attr-defined]

    def _tags(self, model: type[Topic] | type[Application]) -> Tags:
        # Read once per response: a list serializes every row with the same child serializer.
        read = self.__dict__.setdefault("_tags_read", {})
        if model not in read:
            read[model] = bank_tags(model)
        return read[model]

    @extend_schema_field(serializers.URLField())
    def get_url(self, question: Question) -> str:
        # One reverse() a response, not one a row: a slug is URL-safe as it is.
        base = self.__dict__.get("_question_url")
        if base is None:
            path = reverse("api:question-detail", kwargs={"slug": "-"})
            request = self.context.get("request")
            base = request.build_absolute_uri(path) if request is not None else path
            base = self.__dict__["_question_url"] = base.removesuffix("-/")
        return f"{base}{question.slug}/"

    def get_title_html(self, question: Question) -> str:
        return question_search_fields(question)["title_html"]

    def get_snippet(self, question: Question) -> str:
        return question_search_fields(question)["snippet"]


class QuickCheckPublicSerializer(serializers.ModelSerializer):
    class Meta:
        model = QuickCheck
        fields = ["id", "order", "kind", "prompt", "choices"]


class QuickCheckListSerializer(QuickCheckPublicSerializer):
    question: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        read_only=True, slug_field="slug"
    )

    class Meta(QuickCheckPublicSerializer.Meta):
        fields = ["question", *QuickCheckPublicSerializer.Meta.fields]


class ExercisePublicSerializer(serializers.ModelSerializer):
    time_limit = serializers.FloatField(
        source="fitted_time_limit",
        read_only=True,
        help_text=(
            "Seconds a submission may run: a multiple of the reference solution's measured time "
            "with a floor, at most the exercise's ceiling (see grader/limits.py)."
        ),
    )
    examples = serializers.SerializerMethodField(
        help_text="The visible example checks (name and code); hidden checks are never listed."
    )

    class Meta:
        model = Exercise
        fields = ["starter_code", "queue", "time_limit", "memory_limit_mb", "examples"]

    def get_examples(self, exercise: Exercise | ExerciseVersion) -> list[dict[str, str]]:
        return exercise.visible_checks


class QuestionDetailSerializer(QuestionListSerializer):
    topics: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(  # type: ignore[assignment]
        many=True, read_only=True, slug_field="slug"
    )
    applications: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(  # type: ignore[assignment]
        many=True, read_only=True, slug_field="slug"
    )
    hints: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        many=True, read_only=True, slug_field="text"
    )
    quick_checks = QuickCheckPublicSerializer(many=True, read_only=True)
    exercise = serializers.SerializerMethodField()

    class Meta(QuestionListSerializer.Meta):
        fields = QuestionListSerializer.Meta.fields + [
            "prompt",
            "why_asked",
            "concepts",
            "hints",
            "answer",
            "quick_checks",
            "exercise",
            "published_at",
            "updated_at",
        ]

    def get_exercise(self, question: Question) -> dict | None:
        exercise = getattr(question, "exercise", None)
        if exercise is None:
            return None
        request = self.context.get("request")
        user = getattr(request, "user", None)
        # The version this visitor is graded against (learners: the verified one).
        return ExercisePublicSerializer(exercise.shown_to(user)).data


class QuickCheckAnswerSerializer(serializers.Serializer):
    answer = serializers.JSONField(
        help_text="single: the index of a choice; multiple: a list of indices; predict: text"
    )


class QuickCheckResultSerializer(serializers.Serializer):
    correct = serializers.BooleanField()
    answer = serializers.JSONField()
    explanation = serializers.CharField()
