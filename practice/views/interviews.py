"""Mock interview pages: the list of past interviews with their scores, starting one (from a
preset or chosen topics, levels, length and time), taking it one question at a time against the
server's clock, and the report. Every action posts and redirects back, so nothing needs
JavaScript; the countdown only adds a ticking display."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from quizbank.models import QuickCheck

from ..forms import InterviewForm
from ..models.interviews import HINT_COST
from ..selectors import interviews as selectors
from ..services import interviews

TIME_UP = "Time is up: the interview is over, and here is your report."


def _errors(exc: ValidationError) -> str:
    return " ".join(m for ms in exc.message_dict.values() for m in ms)


INTERVIEWS_PER_PAGE = 20


@login_required
def interview_list(request):
    """Your interviews, newest first, a page at a time (a history can grow long)."""
    interviews.interview_settle_expired(user=request.user)
    page = Paginator(selectors.interview_list(user=request.user), INTERVIEWS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    rows = [{"interview": i, "score": selectors.interview_score(interview=i)} for i in page]
    return render(request, "practice/interview_list.html", {"rows": rows, "page": page})


@login_required
def interview_new(request):
    form = InterviewForm(request.POST or None)
    if request.method == "POST":
        preset = interviews.PRESETS.get(request.POST.get("preset", ""))
        params: dict[str, Any] | None = None
        if preset is not None:
            params = preset.params()
        elif form.is_valid():
            params = {**form.cleaned_data, "topics": list(form.cleaned_data["topics"])}
        if params is not None:
            try:
                interview = interviews.interview_create(user=request.user, **params)
            except ValidationError as exc:
                messages.error(request, _errors(exc))
            else:
                return redirect("practice:interview-detail", pk=interview.pk)
    context = {"form": form, "presets": interviews.PRESETS}
    return render(request, "practice/interview_new.html", context)


@login_required
def interview_detail(request, pk: int):
    interview = selectors.interview_get(user=request.user, pk=pk)
    if interviews.interview_settle(interview=interview).active:
        item = selectors.interview_current(interview=interview)
        context: dict[str, Any] = {
            "interview": interview,
            "item": item,
            "seconds_left": int(interview.time_left().total_seconds()),
        }
        if item is not None:
            question = item.question
            context.update(
                question=question,
                hints=list(question.hints.all()[: item.hints_used]),
                more_hints=question.hints.count() > item.hints_used,
                checks=list(question.quick_checks.all()),
                exercise=exercise.shown_to(request.user)
                if (exercise := getattr(question, "exercise", None))
                else None,
                total=len(interview.items.all()),
                hint_cost=HINT_COST,
            )
        return render(request, "practice/interview_detail.html", context)
    report = selectors.interview_report(interview=interview)
    return render(request, "practice/interview_report.html", {"report": report})


def _check_responses(checks: list[QuickCheck], data) -> dict[int, Any]:
    """The quick check answers from the form, keyed by check, in QuickCheck.is_correct's shape."""
    responses: dict[int, Any] = {}
    for check in checks:
        name = f"check-{check.pk}"
        try:
            if check.kind == QuickCheck.Kind.SINGLE and data.get(name):
                responses[check.pk] = int(data[name])
            elif check.kind == QuickCheck.Kind.MULTIPLE and data.getlist(name):
                responses[check.pk] = [int(v) for v in data.getlist(name)]
            elif check.kind == QuickCheck.Kind.PREDICT and data.get(name, "").strip():
                responses[check.pk] = data[name]
        except ValueError:
            continue
    return responses


def _question(interview, slug: str):
    item = next((i for i in interview.items.all() if i.question.slug == slug), None)
    if item is None:
        raise ValidationError({"question": "That question is not in this interview."})
    return item.question


@login_required
@require_POST
def interview_answer(request, pk: int):
    interview = selectors.interview_get(user=request.user, pk=pk)
    try:
        question = _question(interview, request.POST.get("question", ""))
        interviews.interview_answer(
            interview=interview,
            question=question,
            text=request.POST.get("text", ""),
            checks=_check_responses(list(question.quick_checks.all()), request.POST),
            code=request.POST.get("code", ""),
            skip="skip" in request.POST,
        )
    except interviews.TimeUp:
        messages.error(request, TIME_UP)
    except ValidationError as exc:
        messages.error(request, _errors(exc))
    return redirect("practice:interview-detail", pk=pk)


@login_required
@require_POST
def interview_hint(request, pk: int):
    interview = selectors.interview_get(user=request.user, pk=pk)
    try:
        question = _question(interview, request.POST.get("question", ""))
        interviews.interview_hint(interview=interview, question=question)
    except interviews.TimeUp:
        messages.error(request, TIME_UP)
    except ValidationError as exc:
        messages.error(request, _errors(exc))
    return redirect(reverse("practice:interview-detail", args=[pk]) + "#hints")


@login_required
@require_POST
def interview_finish(request, pk: int):
    interview = selectors.interview_get(user=request.user, pk=pk)
    interviews.interview_finish(interview=interview)
    return redirect("practice:interview-detail", pk=pk)
