import django_filters

from quizbank.filters import MultiValueWidget, QuestionFilter, StrictBooleanFilter

from . import selectors


class LearnerQuestionFilter(QuestionFilter):
    """The bank's FilterSet plus the learner's own facets, for the pages and GET /api/questions/.
    Anonymous visitors have no progress or bookmarks, so for them these filter nothing."""

    progress = django_filters.MultipleChoiceFilter(
        choices=selectors.LearnerState.choices,
        widget=MultiValueWidget,
        method="filter_progress",
        help_text="Signed in: solved, attempted (not solved yet) or not_started.",
    )
    bookmarked = StrictBooleanFilter(
        method="filter_bookmarked", help_text="Signed in: only (true) or no (false) bookmarks."
    )

    class Meta(QuestionFilter.Meta):
        fields = [*QuestionFilter.Meta.fields, "progress", "bookmarked"]

    @property
    def user(self):
        return getattr(self.request, "user", None)

    def filter_progress(self, queryset, name, value: list[str]):
        return selectors.filter_by_state(queryset, user=self.user, states=value)

    def filter_bookmarked(self, queryset, name, value: str):
        flag = {"true": True, "false": False}.get(value)
        return selectors.filter_bookmarked(queryset, user=self.user, value=flag)
