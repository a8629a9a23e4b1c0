import copy
import hashlib
import json
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404

from accounts.models import Visitor

from .caching import bank_fact_get, bank_fact_set, bank_version
from .filters import QuestionFilter
from .models import Application, Exercise, Question, QuickCheck, Topic
from .tagging import tag_ids

# A list row shows none of the long text; leaving it out keeps list queries narrow (the derived
# columns are left out by `visible_to` already).
LIST_DEFERRED = ["prompt", "answer", "why_asked", "concepts"]


def question_list(*, user: Visitor) -> QuerySet[Question]:
    """Questions the user may see, with what a list row shows, in a fixed number of queries."""
    return _question_rows(user).defer(*LIST_DEFERRED)


def question_rows(*, user: Visitor) -> QuerySet[Question]:
    """Questions the user may see as the API lists them, in one query: each row carries the ids
    of its topics and applications (`topic_ids`, `application_ids`; quizbank/tagging.py), which
    `caching.bank_tags` reads as slugs, instead of a prefetch query for each."""
    return (
        Question.objects.visible_to(user)
        .select_related("primary_topic")
        .defer(*LIST_DEFERRED)
        .annotate(topic_ids=tag_ids("topics"), application_ids=tag_ids("applications"))
    )


def _question_rows(user: Visitor) -> QuerySet[Question]:
    return (
        Question.objects.visible_to(user)
        .select_related("primary_topic")
        .prefetch_related(
            Prefetch("topics", queryset=Topic.objects.order_by("order", "slug")),
            Prefetch("applications", queryset=Application.objects.order_by("name")),
        )
    )


def question_detail_queryset(*, user: Visitor) -> QuerySet[Question]:
    return _question_rows(user).select_related("exercise").prefetch_related("hints", "quick_checks")


def question_get(*, user: Visitor, slug: str, related: tuple[str, ...] = ()) -> Question:
    """The question `slug` if `user` may see it, else Http404: the one access check for a
    question, used by pages, API and services alike."""
    queryset = Question.objects.visible_to(user)
    if related:
        queryset = queryset.select_related(*related)
    question = queryset.filter(slug=slug).first()
    if question is None:
        raise Http404("No such question.")
    return question


def question_page_get(*, user: Visitor, slug: str | None = None, pk: int | None = None) -> Question:
    """A visible question with everything its page shows (hints, quick checks, exercise)."""
    lookup = {"slug": slug} if slug is not None else {"pk": pk}
    question = question_detail_queryset(user=user).filter(**lookup).first()
    if question is None:
        raise Http404("No such question.")
    return question


def exercise_get(*, user: Visitor, slug: str) -> Exercise:
    """The exercise of the visible question `slug`, else Http404 (no such question, or it has
    no code exercise)."""
    question = question_get(user=user, slug=slug, related=("exercise",))
    exercise = getattr(question, "exercise", None)
    if exercise is None:
        raise Http404("This question has no code exercise.")
    return exercise


def select_question(queryset: QuerySet, path: str = "question", *also: str) -> QuerySet:
    """`queryset.select_related(path, *also)`, the question at `path` read without its derived
    columns (Question.DERIVED_FIELDS: a row of a submission or an activity fetched 17 kB of
    search's embeddings with its question)."""
    deferred = [f"{path}__{name}" for name in Question.DERIVED_FIELDS]
    return queryset.select_related(path, *also).defer(*deferred)


def quick_check_get(*, user: Visitor, pk: int, slug: str | None = None) -> QuickCheck:
    """A quick check of a question `user` may see (of question `slug` when given), else Http404."""
    questions = Question.objects.visible_to(user)
    if slug is not None:
        questions = questions.filter(slug=slug)
    check = select_question(QuickCheck.objects.filter(question__in=questions, pk=pk)).first()
    if check is None:
        raise Http404("No such quick check.")
    return check


def hint_order_check(*, question: Question, order: int) -> None:
    """Http404 unless the question has a hint number `order` (1-based)."""
    if not 1 <= order <= question.hints.count():
        raise Http404("No such hint.")


def topic_list() -> QuerySet[Topic]:
    published = Q(questions__status=Question.Status.PUBLISHED)
    # Meta.ordering is not applied to aggregate queries, so the order is explicit.
    return Topic.objects.annotate(question_count=Count("questions", filter=published)).order_by(
        "order", "name"
    )


def application_list() -> QuerySet[Application]:
    published = Q(questions__status=Question.Status.PUBLISHED)
    return Application.objects.annotate(
        question_count=Count("questions", filter=published)
    ).order_by("name")


def question_facets(filterset: Any) -> dict[str, list[dict[str, Any]]]:
    """Each facet's options with how many questions each would give, the other facets applied
    (so a count is what ticking that option adds). `filterset` must be valid. The learner's own
    facets (progress, bookmarked) are counted by the learner app.

    The counts depend only on the bank's filters and on whether the user sees drafts, so they
    are cached per bank version (caching.py) unless a filter of the learner's own is applied;
    otherwise one query per facet."""
    key = question_list_cache_key(filterset)
    if key:
        key += ":facets"
    if not key:
        return _question_facets(filterset)
    facets = bank_fact_get(key)
    if facets is None:
        facets = _question_facets(filterset)
        bank_fact_set(key, facets)
    return copy.deepcopy(facets)  # callers mark the ticked options


def question_list_cache_key(filterset: Any) -> str | None:
    """The cache key of what the list shows for `filterset`'s filters that is the same for every
    user who sees the same questions (published, or all for staff), in this bank version; None
    when a filter of the learner's own is applied. Worked out once per FilterSet (one read of
    the bank version a request)."""
    if "_list_cache_key" not in filterset.__dict__:
        filterset.__dict__["_list_cache_key"] = _list_cache_key(filterset)
    return filterset.__dict__["_list_cache_key"]


def _list_cache_key(filterset: Any) -> str | None:
    bank_filters = set(QuestionFilter.Meta.fields)
    chosen: dict[str, Any] = {}
    for name, value in filterset.form.cleaned_data.items():
        if value in (None, "", [], ()) or (hasattr(value, "exists") and not value):
            continue
        if name not in bank_filters:
            return None  # the learner's own filter: their counts, not the bank's
        if isinstance(value, str):
            chosen[name] = value
        else:
            chosen[name] = sorted(str(getattr(v, "slug", v)) for v in value)
    user = getattr(filterset.request, "user", None)
    audience = "staff" if user is not None and user.is_authenticated and user.is_staff else "all"
    digest = hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()[:32]
    return f"quizbank:list:{bank_version()}:{audience}:{digest}"


def _question_facets(filterset: Any) -> dict[str, list[dict[str, Any]]]:
    facets: dict[str, list[dict[str, Any]]] = {}
    for name, model in (("topic", Topic), ("application", Application)):
        ids = filterset.queryset_without(name).order_by().values("pk")
        rows = model.objects.annotate(
            count=Count("questions", filter=Q(questions__in=ids))
        ).order_by(*(model._meta.ordering or []))
        facets[name] = [{"value": r.slug, "label": r.name, "count": r.count} for r in rows]
    for name, choices in (
        ("difficulty", Question.Difficulty.choices),
        ("kind", Question.Kind.choices),
    ):
        # Through `pk__in`: a search's relevance cut-off is a window, which cannot be grouped.
        ids = filterset.queryset_without(name).order_by().values("pk")
        rows = Question.objects.filter(pk__in=ids).values(name).annotate(n=Count("pk"))
        counts = {row[name]: row["n"] for row in rows}
        facets[name] = [
            {"value": value, "label": label, "count": counts.get(value, 0)}
            for value, label in choices
        ]
    return facets
