from __future__ import annotations

from typing import Any

from rest_framework import serializers

from quizbank.models import Question, Topic

from ..models import InterviewQuestion, MockInterview, Submission
from ..models.interviews import (
    MAX_ANSWER_CHARS,
    MAX_MINUTES,
    MAX_QUESTIONS,
    MIN_MINUTES,
    MIN_QUESTIONS,
)
from ..selectors.interviews import interview_current


class CounterexampleSerializer(serializers.Serializer):
    family = serializers.CharField(help_text="The family of generated input (e.g. offset).")
    where = serializers.CharField(help_text="What that input is like, in words.")
    size = serializers.IntegerField(required=False, help_text="Elements in the input.")
    input = serializers.CharField(
        required=False, allow_null=True, help_text="The input, shown; absent when too big."
    )
    at = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="Where in that case's output the shown values are, e.g. [1] (blank: the "
        "whole output).",
    )
    expected = serializers.CharField()
    got = serializers.CharField()
    property = serializers.CharField(
        help_text="What differs: value, shape, dtype, type, exception, length, keys, "
        "non-finite values."
    )
    detail = serializers.CharField(required=False, allow_blank=True)
    every_family = serializers.BooleanField(
        required=False,
        help_text="True when the code differs on every kind of generated input, so the smallest "
        "case says nothing of where the mistake is.",
    )
    ordinary_fails = serializers.BooleanField(
        required=False,
        help_text="True when the code differs on the ordinary random inputs already, so the "
        "smallest case's kind (often an empty input) is not where the mistake lies.",
    )
    also_drawn = serializers.BooleanField(
        required=False,
        help_text="True when the case also used random values the check drew itself (a warm-up "
        "batch, a target, a model's weights), which the input shown does not include.",
    )


class CheckResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField()
    message = serializers.CharField(allow_blank=True)
    visible = serializers.BooleanField()
    counterexample = CounterexampleSerializer(
        required=False,
        help_text="On a failing check built on generated inputs: the smallest one on which the "
        "code differs from the reference. Never for a fixed hidden input.",
    )


class DiagnosisSerializer(serializers.Serializer):
    misconception = serializers.CharField()
    belief = serializers.CharField(help_text='The misconception as "You may be assuming that".')
    correction = serializers.CharField(
        required=False, help_text="What is true instead, where the bank states it."
    )
    hint = serializers.CharField()
    confidence = serializers.ChoiceField(
        choices=["outputs"],
        help_text="outputs: on every failing check your code returned what that mistake returns "
        "(or raised the same exception), and it fails no other check.",
    )


class SubmissionSerializer(serializers.ModelSerializer):
    question: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        read_only=True, slug_field="slug"
    )
    checks = CheckResultSerializer(many=True, read_only=True)
    diagnosis = DiagnosisSerializer(
        source="certain_diagnosis",
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
            "scratch",
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
        "only, never scored; scratch: your code then `scratch`, your own lines, showing what they "
        "print (no check, never scored).",
    )
    scratch = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="With mode scratch: lines that call your code (at most 64 KiB).",
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


class InterviewCreateSerializer(serializers.Serializer):
    topics = serializers.ListField(
        child=serializers.SlugField(), required=False, default=list, help_text="Topic slugs."
    )
    difficulty = serializers.ListField(
        child=serializers.ChoiceField(choices=Question.Difficulty.choices),
        required=False,
        default=list,
        help_text="Any of easy, medium, hard; empty for all.",
    )
    questions = serializers.IntegerField(min_value=MIN_QUESTIONS, max_value=MAX_QUESTIONS)
    minutes = serializers.IntegerField(min_value=MIN_MINUTES, max_value=MAX_MINUTES)

    def validate_topics(self, slugs: list[str]) -> list[Topic]:
        topics = list(Topic.objects.filter(slug__in=slugs))
        unknown = sorted(set(slugs) - {t.slug for t in topics})
        if unknown:
            raise serializers.ValidationError(f"No topic with the slug(s) {', '.join(unknown)}.")
        return topics


class InterviewItemSerializer(serializers.Serializer):
    order = serializers.IntegerField()
    question = serializers.SlugField(source="question.slug")
    answered = serializers.BooleanField(source="done")
    hints_used = serializers.IntegerField()


class InterviewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.CharField()
    minutes = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    questions = serializers.SerializerMethodField(help_text="The questions' slugs, in order.")
    current = serializers.SerializerMethodField(
        help_text="The slug of the question to answer now; null once every one is answered "
        "or the interview is over."
    )
    items = InterviewItemSerializer(many=True, source="items.all")

    def get_questions(self, interview: MockInterview) -> list[str]:
        return [item.question.slug for item in interview.items.all()]

    def get_current(self, interview: MockInterview) -> str | None:
        item = interview_current(interview=interview)
        return item.question.slug if item else None


class InterviewAnswerSerializer(serializers.Serializer):
    question = serializers.SlugField(help_text="The current question's slug.")
    text = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=MAX_ANSWER_CHARS
    )
    checks = serializers.DictField(
        child=serializers.JSONField(),
        required=False,
        default=dict,
        help_text="Quick check id -> answer (an index, a list of indices or text).",
    )
    code = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False
    )
    skip = serializers.BooleanField(required=False, default=False)

    def validate_checks(self, value: dict[str, Any]) -> dict[int, Any]:
        try:
            return {int(key): answer for key, answer in value.items()}
        except ValueError as exc:
            raise serializers.ValidationError("Keys are quick check ids.") from exc


class InterviewHintSerializer(serializers.Serializer):
    question = serializers.SlugField(help_text="The current question's slug.")


class HintSerializer(serializers.Serializer):
    order = serializers.IntegerField()
    text = serializers.CharField()


class InterviewScoreSerializer(serializers.Serializer):
    points = serializers.IntegerField()
    max_points = serializers.IntegerField(help_text="Over the graded questions only.")
    percent = serializers.IntegerField(allow_null=True)


class ReportQuestionSerializer(serializers.Serializer):
    order = serializers.IntegerField()
    question = serializers.SlugField()
    title = serializers.CharField()
    kind = serializers.CharField()
    outcome = serializers.ChoiceField(choices=InterviewQuestion.Outcome.choices)
    points = serializers.IntegerField(allow_null=True, help_text="Null: nothing to grade yet.")
    max_points = serializers.IntegerField()
    time_spent_seconds = serializers.IntegerField(allow_null=True)
    hints_used = serializers.IntegerField()
    checks_correct = serializers.IntegerField()
    checks_total = serializers.IntegerField()
    your_answer = serializers.CharField(allow_blank=True)
    submission = serializers.IntegerField(allow_null=True)
    your_code = serializers.CharField(allow_blank=True)
    model_answer = serializers.CharField(help_text="Markdown.")


class ReviewNextSerializer(serializers.Serializer):
    question = serializers.SlugField()
    title = serializers.CharField()


class InterviewReportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    minutes = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    score = InterviewScoreSerializer()
    questions = ReportQuestionSerializer(many=True)
    review_next = ReviewNextSerializer(
        many=True, help_text="Questions not passed, or passed with hints."
    )


class PlanSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    description = serializers.CharField()
    total = serializers.IntegerField(help_text="Questions in the plan.")
    solved = serializers.IntegerField(
        allow_null=True, default=None, help_text="How many you solved; null when signed out."
    )
    started = serializers.BooleanField(
        allow_null=True, default=None, help_text="Whether you follow it; null when signed out."
    )


class PlanQuestionSerializer(serializers.Serializer):
    slug = serializers.SlugField(source="question.slug")
    title = serializers.CharField(source="question.title")
    kind = serializers.CharField(source="question.kind")
    state = serializers.CharField(
        allow_null=True, help_text="solved, attempted, or null: not started (or signed out)."
    )


class PlanSectionSerializer(serializers.Serializer):
    title = serializers.CharField(source="section.title")
    description = serializers.CharField(source="section.description")
    solved = serializers.IntegerField()
    total = serializers.IntegerField()
    questions = PlanQuestionSerializer(many=True)


class PlanDetailSerializer(serializers.Serializer):
    slug = serializers.SlugField(source="plan.slug")
    title = serializers.CharField(source="plan.title")
    description = serializers.CharField(source="plan.description")
    total = serializers.IntegerField()
    solved = serializers.IntegerField()
    started = serializers.BooleanField()
    next_question = serializers.SlugField(
        source="next_question.slug", allow_null=True, help_text="The first not solved yet."
    )
    sections = PlanSectionSerializer(many=True)
