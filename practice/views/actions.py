"""The question page's actions.

Each action answers an htmx request with the partial it replaces, and a plain form post with a
redirect back to the question, so every page works without JavaScript too. Anonymous visitors may
reveal hints and the answer and try quick checks (nothing is recorded); what saves progress asks
them to sign in and sends them back to the question afterwards."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from accounts.redirects import safe_next
from quizbank import selectors as bank_selectors
from quizbank.http import RETRY_AFTER_SECONDS, SERVICE_ERRORS
from quizbank.models import Question, QuickCheck

from .. import selectors
from ..forms import NoteForm, SubmissionForm
from ..models import Activity, Submission
from ..selectors import review as review_selectors
from ..services import learning, submissions
from .pages import CHECK_RESULTS_KEY, learner_updates, whats_next

RATINGS = Activity.Rating.by_public_name()


def _question_url(question: Question) -> str:
    return reverse("practice:question-detail", args=[question.slug])


def _sign_in_first(request, next_url: str):
    login_url = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': next_url})}"
    if request.htmx:
        return HttpResponseClientRedirect(login_url)
    return redirect(login_url)


def _back(request, default: str) -> str:
    return safe_next(request, request.POST.get("next", ""), default)


@require_POST
def hint_reveal(request, slug: str, order: int):
    question = bank_selectors.question_get(user=request.user, slug=slug)
    bank_selectors.hint_order_check(question=question, order=order)
    hints = list(question.hints.all())
    revealed = order
    if request.user.is_authenticated:
        progress = learning.hint_reveal(user=request.user, question=question, order=order)
        revealed = max(order, progress.hints_revealed)
    if not request.htmx:
        return redirect(f"{_question_url(question)}?hints={revealed}#hint-{order}")
    context = {"question": question, "hints": hints, "revealed": revealed, "focus": order}
    return render(request, "practice/_hints.html", context)


@require_POST
def answer_reveal(request, slug: str):
    question = bank_selectors.question_get(user=request.user, slug=slug)
    card = None
    if request.user.is_authenticated:
        learning.answer_reveal(user=request.user, question=question)
        card = selectors.question_state(user=request.user, question=question).card
    if not request.htmx:
        return redirect(f"{_question_url(question)}?answer=1#answer")
    context = {
        "question": question,
        "answer_shown": True,
        "card": card,
        "intervals": selectors.rating_intervals(user=request.user, question=question, card=card),
        "focus": True,
    }
    return render(request, "practice/_answer.html", context)


def _quick_check_response(check: QuickCheck, data) -> object | None:
    """The learner's answer from the form, in the shape QuickCheck.is_correct takes."""
    try:
        if check.kind == QuickCheck.Kind.SINGLE:
            return int(data["choice"])
        if check.kind == QuickCheck.Kind.MULTIPLE:
            return [int(v) for v in data.getlist("choice")] or None
    except (KeyError, ValueError):
        return None
    text = data.get("text", "")
    return text if text.strip() else None


@require_POST
def quick_check_answer(request, slug: str, pk: int):
    """One retry before the answer is shown: a wrong first attempt offers "Try again" or "Show
    answer"; only the first attempt is recorded in the learner's progress."""
    check = bank_selectors.quick_check_get(user=request.user, slug=slug, pk=pk)
    attempt = 2 if request.POST.get("attempt") == "2" else 1
    response = _quick_check_response(check, request.POST)
    result: dict[str, Any]
    if request.POST.get("reveal"):
        result = {"correct": None, "revealed": True}
    elif response is None:
        result = {"error": "Choose an answer first." if check.choices else "Type an answer first."}
        result["attempt"] = attempt
    else:
        result = learning.quick_check_answer(
            user=request.user, check=check, response=response, record=attempt == 1
        )
        result["retry"] = not result["correct"] and attempt == 1
        result["attempt"] = 2 if result["retry"] else attempt
    if not request.htmx:
        # Post/redirect/get: the result waits in the session for the question page, so the
        # address bar never shows the action's URL and a reload does not post the answer again.
        results = request.session.get(CHECK_RESULTS_KEY, {})
        results[str(check.pk)] = result
        request.session[CHECK_RESULTS_KEY] = results
        url = reverse("practice:question-detail", args=[slug])
        return redirect(f"{url}#check-{check.pk}")
    context = {
        "check": check,
        "result": result,
        "learner_updates": learner_updates(request, check.question),
    }
    return render(request, "practice/_quick_check_result.html", context)


@require_POST
def rate(request, slug: str):
    question = bank_selectors.question_get(user=request.user, slug=slug)
    if not request.user.is_authenticated:
        return _sign_in_first(request, _question_url(question))
    rating = RATINGS.get(request.POST.get("rating", ""))
    if rating is None:
        return HttpResponseBadRequest("Rate with again, hard, good or easy.")
    card = learning.review_rate(user=request.user, question=question, rating=rating)
    label = Activity.Rating(rating).public_name
    back = _back(request, "")
    if request.htmx and not back:
        context = {
            "question": question,
            "card": card,
            "intervals": selectors.rating_intervals(
                user=request.user, question=question, card=card
            ),
            "rated": rating,
            "rated_label": label,
            "whats_next": whats_next(request, question),
            "learner_updates": learner_updates(request, question),
        }
        return render(request, "practice/_rating.html", context)
    # From the review queue (`next`) or without JavaScript: on to the next page, with a word.
    messages.success(request, f"Rated “{label}”: next review {card.due:%-d %b %Y, %H:%M} UTC.")
    back = back or f"{_question_url(question)}#answer"
    return HttpResponseClientRedirect(back) if request.htmx else redirect(back)


@require_POST
def bookmark(request, slug: str):
    question = bank_selectors.question_get(user=request.user, slug=slug)
    if not request.user.is_authenticated:
        return _sign_in_first(request, _question_url(question))
    bookmarked = learning.bookmark_toggle(user=request.user, question=question)
    if request.htmx:
        context = {"question": question, "bookmarked": bookmarked, "changed": True}
        return render(request, "practice/_bookmark.html", context)
    return redirect(_back(request, _question_url(question)))


@require_POST
def note(request, slug: str):
    question = bank_selectors.question_get(user=request.user, slug=slug)
    if not request.user.is_authenticated:
        return _sign_in_first(request, f"{_question_url(question)}#note")
    form = NoteForm(request.POST)
    saved = None
    if form.is_valid():
        try:
            saved = learning.note_save(
                user=request.user, question=question, text=form.cleaned_data["text"]
            )
        except ValidationError as error:
            form.add_error("text", error.message_dict["text"])
    if not request.htmx:
        if form.errors:
            messages.error(request, " ".join(str(e) for e in form.errors["text"]))
        return redirect(f"{_question_url(question)}#note")
    # After an error the box keeps what was typed; after a save it shows what was kept.
    text = request.POST.get("text", "") if form.errors else (saved.text if saved else "")
    context = {"question": question, "form": form, "text": text, "saved": not form.errors}
    return render(request, "practice/_note.html", context)


GRADING_UNAVAILABLE = (
    "Grading is unavailable right now (the site cannot reach its grading queue or database), so "
    "this was not submitted. Your code is still in the editor; try again in a minute."
)


UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    *SERVICE_ERRORS,
    submissions.GradingUnavailable,
)


@require_POST
def submit(request, slug: str):
    """The exercise form. During an outage an htmx request gets the form's verdict area with a
    message (a 503 with Retry-After that site.js swaps in), so the page stays usable."""
    try:
        return _submit(request, slug)
    except UNAVAILABLE_ERRORS:
        if not request.htmx:
            raise  # the middleware answers a plain 503 page
        response = render(
            request, "practice/_verdict.html", {"error": GRADING_UNAVAILABLE}, status=503
        )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


def _submit(request, slug: str):
    question = bank_selectors.exercise_get(user=request.user, slug=slug).question
    if not request.user.is_authenticated:
        return _sign_in_first(request, f"{_question_url(question)}#exercise")
    form = SubmissionForm(request.POST)
    submission, error = None, ""
    mode = request.POST.get("mode") or Submission.Mode.SUBMIT
    if form.is_valid():
        try:
            submission = submissions.submission_create(
                user=request.user,
                question=question,
                code=form.cleaned_data["code"],
                mode=mode,
                scratch=form.cleaned_data["scratch"] if mode == Submission.Mode.SCRATCH else "",
            )
        except ValidationError as exc:
            error = " ".join(m for ms in exc.message_dict.values() for m in ms)
        else:
            # Without a broker the verdict is already there; with one this is the queued row.
            submission.refresh_from_db()
    else:
        error = " ".join(str(e) for e in form.errors["code"])
    review = _code_review(request.POST, submission)
    if not request.htmx:
        if error:
            messages.error(request, error)
        if review is not None:  # back to the review, which says how it went
            _review_message(request, review, submission)
            return redirect(_review_url(review))
        return redirect(f"{_question_url(question)}#exercise")
    context: dict[str, Any] = {"submission": submission, "error": error, "question": question}
    if review is not None:
        # Solved again on /review/: that page has no submission list or practice box to update.
        _review_context(context, review)
    elif submission is not None:
        context["submissions"] = selectors.submission_list(user=request.user, question=question)
        if submission.finished:
            context["learner_updates"] = learner_updates(request, question)
            context["whats_next"] = whats_next(request, question)
    return render(request, "practice/_verdict.html", context)


def _code_review(data, submission: Submission | None):
    """The code review a submission from the review page belongs to (its verdict then says how
    the review was rated)."""
    if submission is None or data.get("review") != "1":
        return None
    return review_selectors.code_review_of(submission=submission)


def _review_url(review) -> str:
    url = reverse("practice:review")
    return f"{url}?{review.deck}" if review.deck else url


def _review_context(context: dict[str, Any], review) -> None:
    context["review"] = review
    if not review.open:
        context["review_after"] = review_selectors.code_review_after(review=review)


def _review_message(request, review, submission: Submission | None) -> None:
    if submission is None:
        return
    if not submission.finished:
        messages.info(
            request,
            f"Submission #{submission.pk} went to the grader; its verdict rates this review.",
        )
    elif review.open:
        messages.warning(request, f"Not passed yet: {submission.message}".strip())
    else:
        label = Activity.Rating(review.rating).public_name
        messages.success(request, f"Passed: review rated “{label}”.")


def submission_detail(request, pk: int):
    if not request.user.is_authenticated:
        return _sign_in_first(request, request.get_full_path())
    submission = selectors.submission_get(user=request.user, pk=pk)
    if submission is None:
        raise Http404("No such submission.")
    submission = submissions.submission_settle_overdue(submission=submission)
    context: dict[str, Any] = {"submission": submission, "question": submission.question}
    if not request.htmx:
        return render(request, "practice/submission.html", context)
    review = _code_review(request.GET, submission)
    if review is not None:
        _review_context(context, review)
    elif submission.finished:
        # The list of previous submissions, the practice box and the badge change once, when the
        # verdict arrives.
        context["submissions"] = selectors.submission_list(
            user=request.user, question=submission.question
        )
        context["learner_updates"] = learner_updates(request, submission.question)
        context["whats_next"] = whats_next(request, submission.question)
    return render(request, "practice/_verdict.html", context)
