"""The learner's pages: the home dashboard, the question list with the learner's facets, the
question page, review and progress. The actions a question page posts to are in actions.py."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import QueryDict
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from accounts.selectors import profile_get
from quizbank import selectors as bank_selectors
from quizbank.models import Question

from .. import selectors
from ..context_processors import hides_difficulty
from ..filters import LearnerQuestionFilter
from ..selectors import plans as plan_selectors

PAGE_SIZE = 20


def home(request):
    user = request.user
    context: dict[str, Any] = {
        "topics": bank_selectors.topic_list(),
        "suggested": selectors.question_suggested(user=user),
    }
    if user.is_authenticated:
        due = selectors.due_reviews(user=user)
        profile = profile_get(user=user)
        goal = selectors.daily_goal(user=user, profile=profile)
        context.update(
            profile=profile,
            due=list(due[:3]),
            due_count=due.count(),
            next_review_at=selectors.next_review_at(user=user),
            in_progress=selectors.question_in_progress(user=user),
            today=goal["today"],
            daily_goal=goal["goal"],
            goal_percent=goal["percent"],
            streak=selectors.streak_current(user=user),
            plan=plan_selectors.plan_continue(user=user),
        )
    return render(request, "practice/home.html", context)


def _rows_cache_key(request, filterset, page, filtered: bool) -> str | None:
    """A page of rows as an anonymous visitor sees it is the same for everyone with the same
    filters, until the bank changes; a signed-in learner's rows carry their own progress."""
    if request.user.is_authenticated:
        return None
    bank_key = bank_selectors.question_list_cache_key(filterset)
    return f"{bank_key}:rows:{page.number}:{int(filtered)}" if bank_key else None


@vary_on_headers("HX-Request")
def question_list(request):
    """The list of questions, filtered by the same FilterSet as GET /api/questions/. An htmx
    request gets only the results (the facet counts come along out of band)."""
    rows = selectors.with_learner_state(
        bank_selectors.question_list(user=request.user), user=request.user
    )
    params = request.GET
    # A learner who hides difficulty has no facet to see or untick it with: a difficulty in the
    # address (an old link) is left out, and the page says so.
    difficulty_ignored = hides_difficulty(request) and any(params.getlist("difficulty"))
    if difficulty_ignored:
        params = params.copy()
        params.pop("difficulty")
    filterset = LearnerQuestionFilter(params, queryset=rows, request=request)
    valid = filterset.is_valid()
    errors = filterset.errors
    if not valid:
        # A stale link or a typo (?topic=nope) should not empty the page: say which value is
        # wrong, then list and count with the rest of the filters, so the panel stays usable.
        rest = params.copy()
        for name in errors:
            rest.pop(name, None)
        filterset = LearnerQuestionFilter(rest, queryset=rows, request=request)
        valid = filterset.is_valid()
    questions = filterset.qs if valid else rows.none()
    facets = (
        selectors.facet_groups(
            filterset, user=request.user, hide_difficulty=hides_difficulty(request)
        )
        if valid
        else []
    )
    paginator = Paginator(questions, PAGE_SIZE)
    if facets:
        paginator.count = selectors.list_count(facets)
    page = paginator.get_page(request.GET.get("page"))
    query = params.copy()
    query.pop("page", None)
    filtered = any(v for k, v in params.lists() if k != "page" and any(v))
    context = {
        "filterset": filterset,
        "filter_errors": errors,
        "difficulty_ignored": difficulty_ignored,
        "facets": facets,
        "page": page,
        "query": query.urlencode(),
        "filtered": filtered,
        "searched": filterset.form.cleaned_data.get("search", "") if valid else "",
        # The count, not the rows: a cached page of rows is never fetched.
        "popular": [] if paginator.count else selectors.question_popular(user=request.user),
        "rows_cache_key": _rows_cache_key(request, filterset, page, filtered) if facets else None,
    }
    partial = request.htmx and not request.htmx.history_restore_request
    template = "practice/_question_results.html" if partial else "practice/question_list.html"
    return render(request, template, context)


def _int(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


# The session key under which a quick check answered without JavaScript hands its result to the
# question page it redirects to.
CHECK_RESULTS_KEY = "quick_check_results"


def render_question(request, question, *, check_results=None):
    """The question page. `?hints=N` and `?answer=1` show what a visitor without JavaScript
    revealed (a signed-in learner's reveals are remembered anyway)."""
    state = selectors.question_state(user=request.user, question=question)
    hints = list(question.hints.all())
    exercise = getattr(question, "exercise", None)
    if exercise is not None:  # the version the visitor is graded against (staff: the newest)
        exercise = exercise.shown_to(request.user)
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
        "intervals": selectors.rating_intervals(
            user=request.user, question=question, card=state.card
        ),
        "bookmarked": state.bookmarked,
        "note": state.note,
        "checks": checks,
        "exercise": exercise,
        "submissions": state.submissions,
        "submission": state.submissions[0] if state.submissions else None,
        "queue_state": selectors.queue_state(exercise.queue) if exercise else {},
        "preview": request.user.is_staff and request.GET.get("preview") == "1",
        "unverified": getattr(exercise, "state", "verified") != "verified",
        "neighbours": question_neighbours(request, question),
        "list_query": list_query(request).urlencode(),
    }
    return render(request, "practice/question_detail.html", context)


# The list's filters a question page carries along, so "next" means next in the learner's list;
# or the study plan the learner came from (`plan`), so "next" means next in the plan.
LIST_PARAMS = (
    "topic",
    "application",
    "difficulty",
    "kind",
    "search",
    "progress",
    "bookmarked",
    "plan",
)


def list_query(request) -> QueryDict:
    """The list filters in effect: the page's own query, or for an htmx request the query of the
    page that made it."""
    source = request.GET
    current = request.htmx.current_url if request.htmx else None
    if current:
        source = QueryDict(urlsplit(current).query)
    query = QueryDict(mutable=True)
    for name in LIST_PARAMS:
        if name == "difficulty" and hides_difficulty(request):
            continue  # as the list does: no filter the learner cannot see
        values = [v for v in source.getlist(name) if v]
        if values:
            query.setlist(name, values)
    return query


def question_neighbours(request, question) -> dict[str, Any]:
    """The questions before and after `question` in the learner's filtered list, or in the study
    plan they came from (two queries)."""
    query = list_query(request)
    plan = query.get("plan", "")
    if plan:
        slugs = plan_selectors.plan_question_slugs(user=request.user, slug=str(plan))
    else:
        rows = bank_selectors.question_list(user=request.user)
        filterset = LearnerQuestionFilter(query, queryset=rows, request=request)
        if not filterset.is_valid():
            return {}
        slugs = list(filterset.qs.values_list("slug", flat=True))
    if question.slug not in slugs:
        return {}
    index = slugs.index(question.slug)
    wanted = {
        "previous": slugs[index - 1] if index > 0 else None,
        "next": slugs[index + 1] if index + 1 < len(slugs) else None,
    }
    titles = {
        q.slug: q
        for q in Question.objects.filter(slug__in=[s for s in wanted.values() if s]).only(
            "slug", "title"
        )
    }
    return {key: titles.get(slug) for key, slug in wanted.items() if slug}


def whats_next(request, question) -> dict[str, Any]:
    """After a pass or a rating: the next question in the list, and a suggestion."""
    suggested = selectors.question_suggested(user=request.user)
    return {
        "next": question_neighbours(request, question).get("next"),
        "suggested": suggested if suggested and suggested.pk != question.pk else None,
        "query": list_query(request).urlencode(),
    }


def learner_updates(request, question) -> dict[str, Any] | None:
    """What a partial response swaps in out of band: the "Your practice" box and the badge."""
    if not request.user.is_authenticated:
        return None
    return {
        "state": selectors.question_state(user=request.user, question=question),
        "question": question,
    }


def question_detail(request, slug):
    question = bank_selectors.question_page_get(user=request.user, slug=slug)
    # A quick check answered without JavaScript left its result here; it is shown once.
    results = request.session.pop(CHECK_RESULTS_KEY, None) or {}
    return render_question(request, question, check_results={int(k): v for k, v in results.items()})


CELL, LEFT, TOP = 14, 26, 16


def _heatmap_drawing(weeks) -> dict[str, object]:
    """Where each day's square goes in the SVG heatmap: weeks are columns, Monday on top."""
    cells, months = [], []
    for w, week in enumerate(weeks):
        x = LEFT + w * CELL
        if week[0]["date"].day <= 7 and w < len(weeks) - 1:
            months.append({"x": x, "text": week[0]["date"].strftime("%b")})
        for d, day in enumerate(week):
            cells.append({**day, "x": x, "y": TOP + d * CELL})
    weekdays = [
        {"y": TOP + d * CELL + 9, "text": name} for d, name in ((0, "Mon"), (2, "Wed"), (4, "Fri"))
    ]
    return {
        "cells": cells,
        "months": months,
        "weekdays": weekdays,
        "width": LEFT + len(weeks) * CELL,
        "height": TOP + 7 * CELL,
    }


@login_required
def progress(request):
    summary = selectors.progress_summary(user=request.user)
    context = {"summary": summary, "heatmap": _heatmap_drawing(summary["heatmap"])}
    return render(request, "practice/progress.html", context)
