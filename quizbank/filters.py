import django_filters
from django import forms

from .caching import bank_tags
from .models import Application, Question, Topic
from .search import SearchResults, cached_search_results
from .tagging import has_any


class MultiValueWidget(forms.SelectMultiple):
    """Reads `?f=a&f=b`, `?f=a,b` or a mix of both as one list of values. An empty value given
    on purpose (`?kind=`) is kept, so validation refuses it (400) instead of ignoring it."""

    def value_from_datadict(self, data, files, name):
        values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name, "")]
        return list(dict.fromkeys(v.strip() for raw in values for v in raw.split(",")))


class StrictBooleanFilter(django_filters.ChoiceFilter):
    """`true` or `false`, and nothing else: `?bookmarked=-1` is a 400, not "no filter"."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("choices", [("true", "true"), ("false", "false")])
        super().__init__(*args, **kwargs)


class QuestionFilter(django_filters.FilterSet):
    """The bank's facets and search. Each facet takes several values, repeated
    (`?topic=a&topic=b`) or comma-separated (`?topic=a,b`); values within a facet are OR-ed.
    The learner app extends it with the learner's own facets (progress, bookmarks)."""

    topic = django_filters.MultipleChoiceFilter(
        field_name="topics",
        lookup_expr="slug__in",
        choices=lambda: bank_tags(Topic).choices(),
        widget=MultiValueWidget,
        method="filter_related",
    )
    application = django_filters.MultipleChoiceFilter(
        field_name="applications",
        lookup_expr="slug__in",
        choices=lambda: bank_tags(Application).choices(),
        widget=MultiValueWidget,
        method="filter_related",
    )
    difficulty = django_filters.MultipleChoiceFilter(
        field_name="difficulty",
        lookup_expr="exact",
        choices=Question.Difficulty.choices,
        widget=MultiValueWidget,
        distinct=False,
    )
    kind = django_filters.MultipleChoiceFilter(
        field_name="kind",
        lookup_expr="exact",
        choices=Question.Kind.choices,
        widget=MultiValueWidget,
        distinct=False,
    )
    search = django_filters.CharFilter(method="filter_search", max_length=300)

    class Meta:
        model = Question
        fields = ["topic", "application", "difficulty", "kind", "search"]

    def filter_related(self, queryset, name, value):
        # The slugs were checked against the cached taxonomy, which also gives their ids: the
        # database matches ids (quizbank/tagging.py), no join to the topic or application table.
        if not value:
            return queryset
        model = Question._meta.get_field(name).related_model
        assert model is not None  # topics, applications: many-to-many fields
        return queryset.filter(has_any(name, bank_tags(model).ids_of(value)))

    def filter_search(self, queryset, name, value):
        results = self.search_results(value)
        return queryset if results is None else results.narrow(queryset)

    def search_results(self, text: str) -> SearchResults | None:
        """The search, run once per FilterSet over every question the user may see (and kept
        for the same search's next request): the list and each facet's count
        (`queryset_without`) narrow the same results."""
        cached = self.__dict__.get("_search")
        if cached is None or cached[0] != text:
            cached = self.__dict__["_search"] = (text, cached_search_results(self.queryset, text))
        return cached[1]

    def exact_search_results(self) -> SearchResults | None:
        """The search's results when it is the only filter applied: the search ranked the same
        questions the list holds, so its ids are the list's rows, in order, and its count. None
        otherwise (no search, or a search narrowed by other filters)."""
        chosen = {name for name, value in self.form.cleaned_data.items() if value}
        if chosen != {"search"}:
            return None
        return self.search_results(self.form.cleaned_data["search"])

    def queryset_without(self, name: str):
        """The filtered queryset with every filter but `name` applied: what a facet counts."""
        queryset = self.queryset
        for field, value in self.form.cleaned_data.items():
            if field != name:
                queryset = self.filters[field].filter(queryset, value)
        return queryset
