from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from practice import learning

from .. import selectors
from ..filters import QuestionFilter
from ..models import Question, QuickCheck
from .serializers import (
    ApplicationSerializer,
    QuestionDetailSerializer,
    QuestionListSerializer,
    QuickCheckAnswerSerializer,
    QuickCheckResultSerializer,
    TopicSerializer,
)


class QuestionViewSet(viewsets.ReadOnlyModelViewSet):
    """Published questions (staff also see drafts). Filter by topic, difficulty, kind and
    application (each repeatable), and `search` in your own words (results ordered by relevance)."""

    lookup_field = "slug"
    filterset_class = QuestionFilter

    def get_queryset(self):
        if self.action == "retrieve":
            return selectors.question_detail_queryset(user=self.request.user)
        return selectors.question_list(user=self.request.user)

    def get_serializer_class(self):
        return QuestionDetailSerializer if self.action == "retrieve" else QuestionListSerializer

    def filter_queryset(self, queryset):
        # Filters are for the list; a detail URL names its question exactly.
        return super().filter_queryset(queryset) if self.action == "list" else queryset


class TopicViewSet(viewsets.ReadOnlyModelViewSet):
    """Topics in syllabus order, with the number of published questions in each."""

    serializer_class = TopicSerializer
    lookup_field = "slug"
    pagination_class = None
    queryset = selectors.topic_list()


class ApplicationViewSet(viewsets.ReadOnlyModelViewSet):
    """Real-world applications, with the number of published questions tagged with each."""

    serializer_class = ApplicationSerializer
    lookup_field = "slug"
    pagination_class = None
    queryset = selectors.application_list()


class QuickCheckViewSet(viewsets.GenericViewSet):
    """Answer a quick check: anyone may try; the right answer and explanation come back. A
    signed-in learner's answer is recorded, and a wrong one puts the question up for review."""

    permission_classes = [permissions.AllowAny]

    def get_queryset(self):
        visible = Question.objects.visible_to(self.request.user)
        return QuickCheck.objects.filter(question__in=visible).select_related("question")

    @extend_schema(request=QuickCheckAnswerSerializer, responses=QuickCheckResultSerializer)
    @action(detail=True, methods=["post"])
    def answer(self, request, pk=None):
        check = get_object_or_404(self.get_queryset(), pk=pk)
        serializer = QuickCheckAnswerSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = learning.quick_check_answer(
            user=request.user, check=check, response=serializer.validated_data["answer"]
        )
        return Response(QuickCheckResultSerializer(result).data)
