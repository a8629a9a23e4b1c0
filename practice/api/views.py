from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from .. import selectors, services
from ..models import Submission
from .serializers import ProgressSerializer, SubmissionCreateSerializer, SubmissionSerializer


class SubmissionViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Your code submissions. POST `{"question": "<slug>", "code": "..."}` to have code graded;
    poll the returned submission until its status is no longer `queued` or `running`."""

    serializer_class = SubmissionSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "submissions"

    def get_queryset(self):
        return Submission.objects.visible_to(self.request.user).select_related("question")

    def get_throttles(self):
        return [ScopedRateThrottle()] if self.action == "create" else []

    @extend_schema(request=SubmissionCreateSerializer, responses={201: SubmissionSerializer})
    def create(self, request, *args, **kwargs):
        serializer = SubmissionCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        try:
            submission = services.submission_create(user=request.user, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        # Without a broker the verdict is already there; with one this is the queued row.
        submission.refresh_from_db()
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


class ProgressView(APIView):
    """Your progress: per-topic mastery, activity per day over the last year, streaks, totals and
    recent activity; the same figures as the /progress/ page."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=ProgressSerializer)
    def get(self, request):
        summary = selectors.progress_summary(user=request.user)
        return Response(ProgressSerializer(summary).data)
