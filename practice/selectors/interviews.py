"""Reads about mock interviews: the one access helper, the list, the current question and the
report."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import Http404

from accounts.models import Visitor
from quizbank import selectors as bank_selectors
from quizbank.models import Question

from ..models.interviews import QUESTION_POINTS, InterviewQuestion, MockInterview


def _items() -> Prefetch:
    items = bank_selectors.select_question(
        InterviewQuestion.objects.order_by("order"), "question", "submission"
    )
    return Prefetch("items", queryset=items)


def interview_list(*, user: Visitor) -> QuerySet[MockInterview]:
    """The learner's interviews, newest first, each with its questions (for the score)."""
    return MockInterview.objects.visible_to(user).prefetch_related(_items())


def interview_get(*, user: Visitor, pk: int) -> MockInterview:
    """The interview `pk` if it is `user`'s, else Http404: the one access check for interviews."""
    interview = MockInterview.objects.visible_to(user).prefetch_related(_items()).filter(pk=pk)
    found = interview.first()
    if found is None:
        raise Http404("No such interview.")
    return found


def interview_current(*, interview: MockInterview) -> InterviewQuestion | None:
    """The question to answer now: the first one not answered, while the interview runs."""
    if not interview.active:
        return None
    return next((item for item in interview.items.all() if not item.done), None)


def interview_score(*, interview: MockInterview) -> dict[str, int | None]:
    """Points over the graded questions (free-text-only and pending ones are left out)."""
    points = [item.points() for item in interview.items.all()]
    graded = [p for p in points if p is not None]
    total = QUESTION_POINTS * len(graded)
    return {
        "points": sum(graded),
        "max_points": total,
        "percent": round(100 * sum(graded) / total) if total else None,
    }


WITHDRAWN_TITLE = "A question withdrawn from the bank since"


def interview_report(
    *, interview: MockInterview, with_model_answers: bool = True
) -> dict[str, Any]:
    """What the learner sees at the end: per question the outcome, points, time spent, hints,
    what they wrote and the model answer; the score; and what to review next. A question no
    longer published shows only what the learner wrote: its title and answer are the bank's, and
    the bank no longer shows them."""
    rows = []
    review_next = []
    for item in interview.items.all():
        outcome = item.current_outcome()
        question = item.question
        shown = question.status == Question.Status.PUBLISHED
        rows.append(
            {
                "order": item.order,
                "question": question.slug,
                "title": question.title if shown else WITHDRAWN_TITLE,
                "kind": question.kind,
                "outcome": outcome,
                "outcome_label": InterviewQuestion.Outcome(outcome).label,
                "points": item.points(),
                "max_points": QUESTION_POINTS,
                "time_spent_seconds": (
                    round(item.time_spent.total_seconds()) if item.time_spent else None
                ),
                "hints_used": item.hints_used,
                "checks_correct": item.checks_correct,
                "checks_total": item.checks_total,
                "your_answer": item.answer_text,
                "submission": item.submission_id,
                "your_code": item.submission.code if item.submission else "",
                "model_answer": question.answer if shown and with_model_answers else "",
            }
        )
        if not shown:
            continue
        if outcome != InterviewQuestion.Outcome.PASSED or item.hints_used:
            review_next.append({"question": question.slug, "title": question.title})
    return {
        "id": interview.pk,
        "title": interview.title,
        "status": interview.status,
        "started_at": interview.started_at,
        "ends_at": interview.ends_at,
        "finished_at": interview.finished_at,
        "minutes": interview.minutes,
        "score": interview_score(interview=interview),
        "questions": rows,
        "review_next": review_next,
    }
