from typing import Any

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render
from django.views.decorators.vary import vary_on_headers

from accounts.models import Profile
from practice import selectors as practice_selectors

from . import selectors
from .filters import QuestionFilter

PAGE_SIZE = 20


def home(request):
    user = request.user
    context: dict[str, Any] = {
        "topics": selectors.topic_list(),
        "suggested": practice_selectors.question_suggested(user=user),
    }
    if user.is_authenticated:
        due = practice_selectors.due_reviews(user=user)
        context.update(
            profile=Profile.objects.filter(user=user).first(),
            due=list(due[:3]),
            due_count=due.count(),
            next_review_at=practice_selectors.next_review_at(user=user),
            in_progress=practice_selectors.question_in_progress(user=user),
            today=practice_selectors.activity_today(user=user),
            streak=practice_selectors.streak_current(user=user),
        )
        profile = context["profile"]
        goal = profile.daily_goal if profile else Profile().daily_goal
        context.update(daily_goal=goal, goal_percent=min(100, round(100 * context["today"] / goal)))
    return render(request, "quizbank/home.html", context)


FACET_LEGENDS = {
    "progress": "Your progress",
    "bookmarked": "Bookmarks",
    "topic": "Topic",
    "difficulty": "Difficulty",
    "kind": "Kind",
    "application": "Real-world application",
}


def _facets(filterset, user) -> list[dict[str, Any]]:
    """The list's facets in display order, each option with its count and whether it is ticked."""
    facets = selectors.question_facets(filterset)
    if user.is_authenticated:
        counts = practice_selectors.state_counts(filterset.queryset_without("progress"), user=user)
        facets["progress"] = [
            {"value": value, "label": label, "count": counts[value]}
            for value, label in practice_selectors.LearnerState.choices
        ]
        facets["bookmarked"] = [
            {
                "value": "true",
                "label": "Bookmarked",
                "count": practice_selectors.bookmarked_count(
                    filterset.queryset_without("bookmarked"), user=user
                ),
            }
        ]
    groups = []
    for name, legend in FACET_LEGENDS.items():
        if name not in facets:
            continue
        chosen = filterset.form[name].value()
        chosen = {str(chosen).lower()} if name == "bookmarked" else set(chosen or [])
        for option in facets[name]:
            option["selected"] = option["value"] in chosen
        groups.append({"name": name, "legend": legend, "options": facets[name]})
    return groups


@vary_on_headers("HX-Request")
def question_list(request):
    """The list of questions, filtered by the same FilterSet as GET /api/questions/. An htmx
    request gets only the results (the facet counts come along out of band)."""
    rows = practice_selectors.with_learner_state(
        selectors.question_list(user=request.user), user=request.user
    )
    filterset = QuestionFilter(request.GET, queryset=rows, request=request)
    valid = filterset.is_valid()
    questions = filterset.qs if valid else rows.none()
    page = Paginator(questions, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "filterset": filterset,
        "facets": _facets(filterset, request.user) if valid else [],
        "page": page,
        "query": query.urlencode(),
        "filtered": any(v for k, v in request.GET.lists() if k != "page" and any(v)),
    }
    partial = request.htmx and not request.htmx.history_restore_request
    template = "quizbank/_question_results.html" if partial else "quizbank/question_list.html"
    return render(request, template, context)


def _int(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def render_question(request, question, *, check_results=None):
    """The question page. `?hints=N` and `?answer=1` show what a visitor without JavaScript
    revealed (a signed-in learner's reveals are remembered anyway)."""
    state = practice_selectors.question_state(user=request.user, question=question)
    hints = list(question.hints.all())
    exercise = getattr(question, "exercise", None)
    checks = list(question.quick_checks.all())
    for check in checks:
        check.result = (check_results or {}).get(check.pk)
    context = {
        "question": question,
        "state": state,
        "hints": hints,
        "revealed": min(len(hints), max(state.hints_revealed, _int(request.GET.get("hints")))),
        "answer_shown": state.answer_revealed or request.GET.get("answer") == "1",
        "card": state.card,
        "bookmarked": state.bookmarked,
        "note": state.note,
        "checks": checks,
        "exercise": exercise,
        "submissions": state.submissions,
        "submission": state.submissions[0] if state.submissions else None,
        "gpu": practice_selectors.gpu_queue_state() if exercise and exercise.queue == "gpu" else {},
    }
    return render(request, "quizbank/question_detail.html", context)


def question_detail(request, slug):
    question = get_object_or_404(selectors.question_detail_queryset(user=request.user), slug=slug)
    return render_question(request, question)
