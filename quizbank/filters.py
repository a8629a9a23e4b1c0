import django_filters
from django import forms

from .models import Application, Question, Topic
from .search import question_search


class MultiValueWidget(forms.SelectMultiple):
    """Reads `?f=a&f=b`, `?f=a,b` or a mix of both as one list of values."""

    def value_from_datadict(self, data, files, name):
        values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name, "")]
        return list(dict.fromkeys(v.strip() for raw in values for v in raw.split(",") if v.strip()))


class QuestionFilter(django_filters.FilterSet):
    """One FilterSet for the API and the pages. Each facet takes several values, repeated
    (`?topic=a&topic=b`) or comma-separated (`?topic=a,b`); values within a facet are OR-ed."""

    topic = django_filters.ModelMultipleChoiceFilter(
        field_name="topics__slug",
        lookup_expr="exact",
        to_field_name="slug",
        queryset=Topic.objects.all(),
        widget=MultiValueWidget,
        distinct=True,
    )
    application = django_filters.ModelMultipleChoiceFilter(
        field_name="applications__slug",
        lookup_expr="exact",
        to_field_name="slug",
        queryset=Application.objects.all(),
        widget=MultiValueWidget,
        distinct=True,
    )
    difficulty = django_filters.MultipleChoiceFilter(
        field_name="difficulty",
        lookup_expr="exact",
        choices=Question.Difficulty.choices,
        widget=MultiValueWidget,
    )
    kind = django_filters.MultipleChoiceFilter(
        field_name="kind", lookup_expr="exact", choices=Question.Kind.choices, widget=MultiValueWidget
    )
    search = django_filters.CharFilter(method="filter_search", max_length=300)

    class Meta:
        model = Question
        fields = ["topic", "application", "difficulty", "kind", "search"]

    def filter_search(self, queryset, name, value):
        return question_search(queryset, value)
