import csv

from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from quizbank import selectors as bank_selectors
from quizbank.api.schema import SummarySchema
from quizbank.api.serializers import (
    QuickCheckAnswerSerializer,
    QuickCheckListSerializer,
    QuickCheckResultSerializer,
)
from quizbank.api.streaming import json_object_stream
from quizbank.api.views import QuestionViewSet
from quizbank.models import Question, QuickCheck

from .. import selectors
from ..filters import LearnerQuestionFilter
from ..models import Submission
from ..selectors import export as export_selectors
from ..selectors import interviews as interview_selectors
from ..selectors import plans as plan_selectors
from ..services import interviews, learning, submissions
from .serializers import (
    HintSerializer,
    InterviewAnswerSerializer,
    InterviewCreateSerializer,
    InterviewHintSerializer,
    InterviewReportSerializer,
    InterviewSerializer,
    PlanDetailSerializer,
    PlanSerializer,
    ProgressSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
)


class LearnerQuestionViewSet(QuestionViewSet):
    __doc__ = (QuestionViewSet.__doc__ or "") + (
        "\n\nSigned in, also filter by your `progress` and `bookmarked` questions."
    )
    filterset_class = LearnerQuestionFilter


KEY_MAX = 80  # Submission.idempotency_key's length


class SubmissionViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Your code submissions. POST `{"question": "<slug>", "code": "...", "mode": "submit"}` to
    have code graded (`"mode": "examples"` runs only the visible checks, is never scored, and is
    listed apart: `GET ?mode=examples`); poll the returned submission until its status is no
    longer `queued` or `running`. A failing submission may carry a `diagnosis`: the misconception
    it shares with a known wrong solution, and a hint. Send an `Idempotency-Key` header (any
    string you make up, at most 80 characters) to retry a POST safely: the same key answers the
    submission it made (200) instead of making another."""

    serializer_class = SubmissionSerializer
    permission_classes = [permissions.IsAuthenticated]

    def get_queryset(self):
        queryset = bank_selectors.select_question(Submission.objects.visible_to(self.request.user))
        if self.action == "list":
            mode = self.request.query_params.get("mode", Submission.Mode.SUBMIT)
            if mode not in Submission.Mode.values:
                raise ValidationError({"mode": "Use submit or examples."})
            queryset = queryset.filter(mode=mode)
        return queryset

    def get_object(self):
        return submissions.submission_settle_overdue(submission=super().get_object())

    @extend_schema(
        request=SubmissionCreateSerializer,
        responses={201: SubmissionSerializer, 200: SubmissionSerializer},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="Makes a retried POST answer the submission it made (200).",
            )
        ],
    )
    def create(self, request, *args, **kwargs):
        serializer = SubmissionCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "").strip()
        if len(key) > KEY_MAX:
            raise ValidationError({"Idempotency-Key": f"At most {KEY_MAX} characters."})
        if key:
            submission, created = submissions.submission_create_once(
                user=request.user, idempotency_key=key, **serializer.validated_data
            )
        else:
            submission, created = (
                submissions.submission_create(user=request.user, **serializer.validated_data),
                True,
            )
        if not created:
            sent = serializer.validated_data
            if (submission.code, submission.question_id) != (sent["code"], sent["question"].pk):
                raise ValidationError(
                    {"Idempotency-Key": "This key was already used for another submission."}
                )
            return Response(SubmissionSerializer(submission).data, status=status.HTTP_200_OK)
        # Without a broker the verdict is already there; with one this is the queued row. Its
        # learner and question cannot have changed: their cached rows are kept (a query less).
        submission.refresh_from_db(fields=_REFRESHED)
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


_REFRESHED = [
    f.attname
    for f in Submission._meta.concrete_fields
    if f.attname not in ("user_id", "question_id")
]


class ProgressViewSet(viewsets.ViewSet):
    """Your progress: per-topic mastery, activity per day over the last year, streaks, totals and
    recent activity; the same figures as the /progress/ page."""

    permission_classes = [permissions.IsAuthenticated]
    schema = SummarySchema()

    @extend_schema(responses=ProgressSerializer)
    def list(self, request):
        summary = selectors.progress_summary(user=request.user)
        return Response(ProgressSerializer(summary).data)


class QuickCheckViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Quick checks of the questions you may see (`?question=<slug>` for one question's), without
    their answers. POST an answer to `answer/`: anyone may try; the right answer and explanation
    come back. A signed-in learner's answer is recorded, and a wrong one puts the question up for
    review."""

    permission_classes = [permissions.AllowAny]
    lookup_value_regex = r"\d+"
    serializer_class = QuickCheckListSerializer

    def get_queryset(self):
        checks = bank_selectors.select_question(
            QuickCheck.objects.filter(question__in=Question.objects.visible_to(self.request.user))
        )
        slug = self.request.query_params.get("question")
        if slug:
            checks = checks.filter(question__slug=slug)
        return checks.order_by("question__slug", "order")

    @extend_schema(request=QuickCheckAnswerSerializer, responses=QuickCheckResultSerializer)
    @action(detail=True, methods=["post"])
    def answer(self, request, pk=None):
        check = bank_selectors.quick_check_get(user=request.user, pk=int(pk))
        serializer = QuickCheckAnswerSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = learning.quick_check_answer(
            user=request.user, check=check, response=serializer.validated_data["answer"]
        )
        return Response(QuickCheckResultSerializer(result).data)


class InterviewViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Your mock interviews. POST `{"topics": [...], "difficulty": [...], "questions": 5,
    "minutes": 45}` to start one: the questions come in order, and the clock is the server's.
    Answer the `current` question at `answer/` (`text` and quick `checks` for a concept
    question, `code` for a code question, or `skip`), take its next hint at `hint/` (each costs
    points), and `finish/` for the report. Once `ends_at` has passed, an answer or a hint is
    refused with 409 and the report, and the interview is over. Someone else's is a 404."""

    serializer_class = InterviewSerializer
    permission_classes = [permissions.IsAuthenticated]
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        return interview_selectors.interview_list(user=self.request.user)

    def get_object(self):
        interview = interview_selectors.interview_get(
            user=self.request.user, pk=int(self.kwargs["pk"])
        )
        return interviews.interview_settle(interview=interview)

    def _fresh(self, interview):
        return interview_selectors.interview_get(user=self.request.user, pk=interview.pk)

    def list(self, request, *args, **kwargs):
        interviews.interview_settle_expired(user=request.user)
        return super().list(request, *args, **kwargs)

    @extend_schema(request=InterviewCreateSerializer, responses={201: InterviewSerializer})
    def create(self, request, *args, **kwargs):
        serializer = InterviewCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        interview = interviews.interview_create(user=request.user, **serializer.validated_data)
        data = InterviewSerializer(self._fresh(interview)).data
        return Response(data, status=status.HTTP_201_CREATED)

    def retrieve(self, request, *args, **kwargs):
        interview = self.get_object()
        data = dict(InterviewSerializer(interview).data)
        data["report"] = None
        if not interview.active:
            report = interview_selectors.interview_report(interview=interview)
            data["report"] = InterviewReportSerializer(report).data
        return Response(data)

    def _time_up(self, interview) -> Response:
        report = interview_selectors.interview_report(interview=self._fresh(interview))
        return Response(
            {"detail": "Time is up: this interview is over.", "report": report},
            status=status.HTTP_409_CONFLICT,
        )

    def _question(self, interview, slug: str):
        item = next((i for i in interview.items.all() if i.question.slug == slug), None)
        if item is None:
            raise ValidationError({"question": f"{slug!r} is not in this interview."})
        return item.question

    @extend_schema(request=InterviewAnswerSerializer, responses=InterviewSerializer)
    @action(detail=True, methods=["post"])
    def answer(self, request, pk=None):
        interview = self.get_object()
        serializer = InterviewAnswerSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            interviews.interview_answer(
                interview=interview,
                question=self._question(interview, data["question"]),
                text=data["text"],
                checks=data["checks"],
                code=data["code"],
                skip=data["skip"],
            )
        except interviews.TimeUp:
            return self._time_up(interview)
        return Response(InterviewSerializer(self._fresh(interview)).data)

    @extend_schema(request=InterviewHintSerializer, responses=HintSerializer)
    @action(detail=True, methods=["post"])
    def hint(self, request, pk=None):
        interview = self.get_object()
        serializer = InterviewHintSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        question = self._question(interview, serializer.validated_data["question"])
        try:
            hint = interviews.interview_hint(interview=interview, question=question)
        except interviews.TimeUp:
            return self._time_up(interview)
        return Response(HintSerializer(hint).data)

    @extend_schema(request=None, responses=InterviewReportSerializer)
    @action(detail=True, methods=["post"])
    def finish(self, request, pk=None):
        interview = interviews.interview_finish(interview=self.get_object())
        report = interview_selectors.interview_report(interview=self._fresh(interview))
        return Response(InterviewReportSerializer(report).data)


class PlanViewSet(viewsets.GenericViewSet):
    """Study plans: curated tracks through the bank, split into days or chapters. Signed in, each
    comes with your progress (`solved`, `started`, and per question its `state`)."""

    permission_classes = [permissions.AllowAny]
    lookup_field = "slug"
    serializer_class = PlanSerializer
    pagination_class = None

    def get_queryset(self):
        return plan_selectors.plan_list(user=self.request.user)

    def list(self, request):
        return Response(PlanSerializer(self.get_queryset(), many=True).data)

    @extend_schema(responses=PlanDetailSerializer)
    def retrieve(self, request, slug=None):
        progress = plan_selectors.plan_get(user=request.user, slug=str(slug))
        return Response(PlanDetailSerializer(progress).data)


class MeViewSet(viewsets.ViewSet):
    """Your data. `export/`: everything your account owns (profile, activity, progress,
    submissions with their code, notes, bookmarks, review cards and their log, interviews, plans)
    as one JSON document; `export/activity/`: your activity as CSV."""

    permission_classes = [permissions.IsAuthenticated]

    def _filename(self, request, ext: str) -> str:
        return f"quizbank-{request.user.get_username()}-{timezone.localdate():%Y-%m-%d}.{ext}"

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    # JSON even for a browser (the profile's button): a download, not the browsable API page.
    @action(detail=False, methods=["get"], url_path="export", renderer_classes=[JSONRenderer])
    def export(self, request):
        sections = export_selectors.account_export(user=request.user)
        response = StreamingHttpResponse(
            json_object_stream(sections), content_type="application/json"
        )
        name = self._filename(request, "json")
        response["Content-Disposition"] = content_disposition_header(True, name)
        return response

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    @action(detail=False, methods=["get"], url_path="export/activity")
    def activity(self, request):
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        name = self._filename(request, "csv").replace(".csv", "-activity.csv")
        response["Content-Disposition"] = content_disposition_header(True, name)
        writer = csv.DictWriter(response, fieldnames=export_selectors.ACTIVITY_COLUMNS)
        writer.writeheader()
        for row in export_selectors.activity_rows(user=request.user):
            writer.writerow({**row, "created_at": row["created_at"].isoformat()})
        return response
