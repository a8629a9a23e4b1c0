"""Reads about study plans: the list with each plan's size and your progress, one plan with the
state of each of its questions, and the plan to continue on the home page. A plan shows only the
questions the visitor may see (a question unpublished since is left out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet
from django.http import Http404

from accounts.models import Visitor, signed_in
from quizbank.models import Question

from ..models import PlanEnrollment, PlanItem, PlanSection, QuestionProgress, StudyPlan


def plan_list(*, user: Visitor) -> QuerySet[StudyPlan]:
    """Every plan with `total` (questions you may see), and for a signed-in learner `solved`
    (of those) and `started`; one query."""
    visible = Question.objects.visible_to(user).values("pk")
    plans = StudyPlan.objects.annotate(
        total=Count(
            "sections__items", filter=Q(sections__items__question__in=visible), distinct=True
        )
    )
    if not signed_in(user):
        return plans
    solved = QuestionProgress.objects.filter(
        user=user, state=QuestionProgress.State.SOLVED, question__in=visible
    ).values("question")
    return plans.annotate(
        solved=Count(
            "sections__items", filter=Q(sections__items__question__in=solved), distinct=True
        ),
        started=Exists(PlanEnrollment.objects.filter(user=user, plan=OuterRef("pk"))),
    )


@dataclass
class PlanProgress:
    plan: StudyPlan
    sections: list[dict[str, Any]] = field(default_factory=list)
    solved: int = 0
    total: int = 0
    started: bool = False
    next_question: Question | None = None

    @property
    def percent(self) -> int:
        return round(100 * self.solved / self.total) if self.total else 0


def plan_get(*, user: Visitor, slug: str) -> PlanProgress:
    """The plan `slug` (else Http404) with the state of each question for `user`."""
    items = PlanItem.objects.filter(question__in=Question.objects.visible_to(user)).select_related(
        "question__primary_topic"
    )
    plan = (
        StudyPlan.objects.prefetch_related(
            Prefetch("sections", queryset=PlanSection.objects.order_by("order")),
            Prefetch("sections__items", queryset=items.order_by("order")),
        )
        .filter(slug=slug)
        .first()
    )
    if plan is None:
        raise Http404("No such study plan.")
    return _progress(plan, user)


def _progress(plan: StudyPlan, user: Visitor) -> PlanProgress:
    result = PlanProgress(plan=plan)
    states: dict[int, str] = {}
    if signed_in(user):
        ids = [item.question_id for s in plan.sections.all() for item in s.items.all()]
        rows = QuestionProgress.objects.filter(user=user, question__in=ids)
        states = dict(rows.values_list("question_id", "state"))
        result.started = PlanEnrollment.objects.filter(user=user, plan=plan).exists()
    for section in plan.sections.all():
        questions = []
        for item in section.items.all():
            state = states.get(item.question_id)
            questions.append({"question": item.question, "state": state})
            result.total += 1
            if state == QuestionProgress.State.SOLVED:
                result.solved += 1
            elif result.next_question is None:
                result.next_question = item.question
        done = sum(q["state"] == QuestionProgress.State.SOLVED for q in questions)
        result.sections.append(
            {"section": section, "questions": questions, "solved": done, "total": len(questions)}
        )
    return result


def plan_question_slugs(*, user: Visitor, slug: str) -> list[str]:
    """The plan's questions the visitor may see, in the plan's order (none for no such plan)."""
    return list(
        PlanItem.objects.filter(
            section__plan__slug=slug, question__in=Question.objects.visible_to(user)
        )
        .order_by("section__order", "order")
        .values_list("question__slug", flat=True)
    )


def plan_continue(*, user: Visitor) -> PlanProgress | None:
    """The plan to continue: the most recently started one that still has a question to do."""
    if not signed_in(user):
        return None
    for enrollment in PlanEnrollment.objects.visible_to(user).select_related("plan")[:5]:
        progress = plan_get(user=user, slug=enrollment.plan.slug)
        if progress.next_question is not None:
            return progress
    return None
