from __future__ import annotations

from typing import Any

from rest_framework import serializers

from quizbank.models import Question

from ..models import Submission


class CheckResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField()
    message = serializers.CharField(allow_blank=True)
    visible = serializers.BooleanField()


class DiagnosisSerializer(serializers.Serializer):
    misconception = serializers.CharField()
    hint = serializers.CharField()
    confidence = serializers.ChoiceField(
        choices=["outputs", "pattern"],
        help_text="outputs: your failing checks returned what that mistake returns; "
        "pattern: you failed exactly the checks that mistake fails.",
    )


class SubmissionSerializer(serializers.ModelSerializer):
    question: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        read_only=True, slug_field="slug"
    )
    checks = CheckResultSerializer(many=True, read_only=True)
    diagnosis = DiagnosisSerializer(
        read_only=True,
        allow_null=True,
        help_text="Null unless the submission failed the way a known wrong solution does.",
    )

    class Meta:
        model = Submission
        fields = [
            "id",
            "question",
            "mode",
            "status",
            "message",
            "diagnosis",
            "checks",
            "output",
            "queue",
            "tries",
            "queued_at",
            "started_at",
            "finished_at",
            "duration_ms",
            "code",
        ]
        read_only_fields = fields


class SubmissionCreateSerializer(serializers.Serializer):
    question = serializers.SlugField(help_text="The slug of a code question.")
    code = serializers.CharField(trim_whitespace=False, help_text="At most 64 KiB of UTF-8.")
    mode = serializers.ChoiceField(
        choices=Submission.Mode.choices,
        default=Submission.Mode.SUBMIT,
        help_text="submit: every check, can solve the question; examples: the visible checks "
        "only, never scored.",
    )

    def validate_question(self, slug: str) -> Question:
        user = self.context["request"].user
        question = (
            Question.objects.visible_to(user).select_related("exercise").filter(slug=slug).first()
        )
        if question is None:
            raise serializers.ValidationError(f"No question with the slug {slug!r}.")
        if not hasattr(question, "exercise"):
            raise serializers.ValidationError(f"{slug!r} has no code exercise to submit to.")
        return question


class TopicMasterySerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    solved = serializers.IntegerField()
    attempted = serializers.IntegerField(help_text="Attempted and not solved yet.")
    total = serializers.IntegerField(help_text="Published questions in the topic.")


class DayActivitySerializer(serializers.Serializer):
    date = serializers.DateField()
    count = serializers.IntegerField(help_text="Things done that day (hints, answers, checks...).")


class RecentActivitySerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    kind = serializers.CharField()
    description = serializers.CharField()
    question = serializers.SlugField(
        allow_null=True, help_text="Null when the question is no longer published."
    )
    question_title = serializers.CharField()
    correct = serializers.BooleanField(allow_null=True)


class ProgressTotalsSerializer(serializers.Serializer):
    solved = serializers.IntegerField()
    attempted = serializers.IntegerField()
    questions = serializers.IntegerField()
    reviews_due = serializers.IntegerField()
    active_days = serializers.IntegerField()


class StreakSerializer(serializers.Serializer):
    current = serializers.IntegerField(help_text="Days in a row with activity, up to today.")
    longest = serializers.IntegerField()


class ProgressSerializer(serializers.Serializer):
    totals = ProgressTotalsSerializer()
    streak = StreakSerializer()
    topics = TopicMasterySerializer(many=True)
    days = DayActivitySerializer(many=True, help_text="Days with activity in the last year.")
    recent = RecentActivitySerializer(many=True)
