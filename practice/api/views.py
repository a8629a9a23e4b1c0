from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from quizbank import selectors as bank_selectors
from quizbank.api.serializers import (
    QuickCheckAnswerSerializer,
    QuickCheckListSerializer,
    QuickCheckResultSerializer,
)
from quizbank.api.views import QuestionViewSet
from quizbank.models import Question, QuickCheck

from .. import selectors
from ..filters import LearnerQuestionFilter
from ..models import Submission
from ..services import learning, submissions
from .serializers import ProgressSerializer, SubmissionCreateSerializer, SubmissionSerializer


class LearnerQuestionViewSet(QuestionViewSet):
    __doc__ = (QuestionViewSet.__doc__ or "") + (
        "\n\nSigned in, also filter by your `progress` and `bookmarked` questions."
    )
    filterset_class = LearnerQuestionFilter


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
    it shares with a known wrong solution, and a hint."""

    serializer_class = SubmissionSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "submissions"

    def get_queryset(self):
        queryset = Submission.objects.visible_to(self.request.user).select_related("question")
        if self.action == "list":
            mode = self.request.query_params.get("mode", Submission.Mode.SUBMIT)
            if mode not in Submission.Mode.values:
                raise ValidationError({"mode": "Use submit or examples."})
            queryset = queryset.filter(mode=mode)
        return queryset

    def get_object(self):
        return submissions.submission_settle_overdue(submission=super().get_object())

    def get_throttles(self):
        return [ScopedRateThrottle()] if self.action == "create" else []

    @extend_schema(request=SubmissionCreateSerializer, responses={201: SubmissionSerializer})
    def create(self, request, *args, **kwargs):
        serializer = SubmissionCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        try:
            submission = submissions.submission_create(
                user=request.user, **serializer.validated_data
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        # Without a broker the verdict is already there; with one this is the queued row.
        submission.refresh_from_db()
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


class ProgressViewSet(viewsets.ViewSet):
    """Your progress: per-topic mastery, activity per day over the last year, streaks, totals and
    recent activity; the same figures as the /progress/ page."""

    permission_classes = [permissions.IsAuthenticated]

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
        checks = QuickCheck.objects.filter(
            question__in=Question.objects.visible_to(self.request.user)
        ).select_related("question")
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
