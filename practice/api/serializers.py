from rest_framework import serializers

from quizbank.models import Question

from ..models import MAX_CODE_BYTES, Submission


class CheckResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField()
    message = serializers.CharField(allow_blank=True)
    visible = serializers.BooleanField()


class SubmissionSerializer(serializers.ModelSerializer):
    question = serializers.SlugRelatedField(read_only=True, slug_field="slug")
    checks = CheckResultSerializer(many=True, read_only=True)

    class Meta:
        model = Submission
        fields = [
            "id",
            "question",
            "status",
            "message",
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

    def validate_code(self, code: str) -> str:
        size = len(code.encode("utf-8"))
        if size > MAX_CODE_BYTES:
            raise serializers.ValidationError(
                f"The code is {size} bytes; the limit is {MAX_CODE_BYTES} bytes (64 KiB)."
            )
        return code
