"""The review session: one card at a time from the chosen deck, rated by the learner (concept
questions) or by the grader (code questions, solved again on the page), with the last rating
undoable. Each action posts and redirects back to the deck, so the page works without
JavaScript; site.js adds the keys."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from quizbank import selectors as bank_selectors

from .. import scheduling, selectors
from ..models import Activity, ReviewCard
from ..selectors import review as review_selectors
from ..selectors.review import Deck, DeckKind
from ..services import review as review_services
from .actions import RATINGS


def _deck_url(deck_query: str) -> str:
    url = reverse("practice:review")
    return f"{url}?{deck_query}" if deck_query else url


def _posted_deck(request) -> str:
    """The deck the learner was in (the form carries it), or all due if it no longer parses."""
    try:
        return review_selectors.deck_parse(request.POST).query
    except ValidationError:
        return ""


def _when(card: ReviewCard) -> str:
    zone = timezone.get_current_timezone_name()
    return f"{timezone.localtime(card.due):%-d %b %Y, %H:%M} ({zone})"


def _reasons(error: ValidationError) -> list[str]:
    """ "field: reason" for each problem, as every 4xx of this site words it."""
    return [f"{field}: {m}" for field, ms in error.message_dict.items() for m in ms]


def _bad_request(error: ValidationError) -> HttpResponseBadRequest:
    return HttpResponseBadRequest(" ".join(_reasons(error)), content_type="text/plain")


@login_required
def review(request):
    user = request.user
    context: dict[str, Any] = {
        "deck": Deck(),
        "counts": review_selectors.deck_counts(user=user),
        "topics": bank_selectors.topic_list(),
        "reviewed_today": review_selectors.reviewed_today(user=user),
        "undo": review_selectors.undo_get(user=user),
        "deck_kinds": DeckKind,
    }
    try:
        deck = review_selectors.deck_parse(request.GET)
    except ValidationError as error:
        context["errors"] = _reasons(error)
        return render(request, "practice/review.html", context, status=400)
    context["deck"] = deck
    questions = review_selectors.deck_questions(user=user, deck=deck)
    first = questions.first()
    context["remaining"] = questions.count() if first else 0
    if first is None:
        context["next_review_at"] = selectors.next_review_at(user=user)
        return render(request, "practice/review.html", context)
    question = bank_selectors.question_page_get(user=user, pk=first.pk)
    card = ReviewCard.objects.filter(user=user, question=question).first()
    context.update(question=question, card=card, new=card is None)
    if question.kind == question.Kind.CODE and hasattr(question, "exercise"):
        code_review = review_services.code_review_start(
            user=user, question=question, deck=deck.query
        )
        context.update(
            exercise=question.exercise.shown_to(user),
            code_review=code_review,
            hints=list(question.hints.all()),
            last_code=review_selectors.last_code(user=user, question=question),
        )
    else:
        unsaved = card or ReviewCard(user=user, question=question, due=timezone.now())
        context["intervals"] = scheduling.intervals(card=unsaved)
    return render(request, "practice/review.html", context)


@login_required
@require_POST
def rate(request, slug: str):
    question = review_selectors.review_question_get(user=request.user, slug=slug)
    rating = RATINGS.get(request.POST.get("rating", ""))
    if rating is None:
        return HttpResponseBadRequest("rating: rate with again, hard, good or easy.")
    try:
        card = review_services.review_answer(user=request.user, question=question, rating=rating)
    except ValidationError as error:
        return _bad_request(error)
    label = Activity.Rating(rating).public_name
    messages.success(request, f"Rated “{label}”: {question.title} comes back {_when(card)}.")
    return redirect(_deck_url(_posted_deck(request)))


@login_required
@require_POST
def undo(request):
    try:
        pk = int(request.POST.get("rating", ""))
    except ValueError:
        return HttpResponseBadRequest("rating: the id of the rating to undo.")
    activity = review_selectors.rating_get(user=request.user, pk=pk)
    try:
        review_services.review_undo(user=request.user, activity=activity)
    except review_services.UndoRefused as refused:
        return HttpResponse(f"rating: {refused}", status=409, content_type="text/plain")
    messages.success(request, f"Undid your rating of “{activity.question.title}”.")
    return redirect(_deck_url(_posted_deck(request)))


@login_required
@require_POST
def hint(request, slug: str):
    code_review = review_selectors.code_review_get(user=request.user, slug=slug)
    try:
        code_review = review_services.code_review_hint(review=code_review)
    except ValidationError as error:
        return _bad_request(error)
    if request.htmx:
        context = {
            "code_review": code_review,
            "question": code_review.question,
            "hints": list(code_review.question.hints.all()),
            "focus": True,
        }
        return render(request, "practice/_review_hints.html", context)
    return redirect(f"{_deck_url(code_review.deck)}#review-hints")


@login_required
@require_POST
def give_up(request, slug: str):
    code_review = review_selectors.code_review_get(user=request.user, slug=slug)
    try:
        card = review_services.code_review_give_up(review=code_review)
    except ValidationError as error:
        return _bad_request(error)
    messages.info(
        request,
        f"Gave up on “{code_review.question.title}”: rated “again”, back {_when(card)}.",
    )
    return redirect(_deck_url(code_review.deck))
