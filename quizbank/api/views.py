from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import viewsets

from .. import selectors
from ..filters import QuestionFilter
from .serializers import (
    ApplicationSerializer,
    QuestionDetailSerializer,
    QuestionListSerializer,
    TopicSerializer,
)


class KeptFilterBackend(DjangoFilterBackend):
    """Keeps the FilterSet on the view, for what pagination can learn from it."""

    def get_filterset(self, request, queryset, view):
        view.filterset = super().get_filterset(request, queryset, view)
        return view.filterset


class QuestionViewSet(viewsets.ReadOnlyModelViewSet):
    """Published questions (staff also see drafts). Filter by topic, difficulty, kind and
    application (each repeatable), and `search` in your own words (results ordered by relevance)."""

    lookup_field = "slug"
    filterset_class = QuestionFilter
    filter_backends = [KeptFilterBackend]

    def get_queryset(self):
        if self.action == "retrieve":
            return selectors.question_detail_queryset(user=self.request.user)
        return selectors.question_rows(user=self.request.user)

    def get_serializer_class(self):
        return QuestionDetailSerializer if self.action == "retrieve" else QuestionListSerializer

    def filter_queryset(self, queryset):
        # Filters are for the list; a detail URL names its question exactly.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def paginate_queryset(self, queryset):
        # A search alone already gave the list's rows in order: page through its ids and fetch
        # one page of rows, instead of fetching every match to sort and count them again.
        filterset = getattr(self, "filterset", None)
        results = filterset.exact_search_results() if filterset is not None else None
        if results is None:
            return super().paginate_queryset(queryset)
        ids = super().paginate_queryset(results.ids)
        return None if ids is None else list(results.only(ids).narrow(self.get_queryset()))


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
