"""Reads for review sessions: the decks, what remains in one, and the learner's own cards, code
reviews and undo. Each takes the user and reads only their rows; what is not theirs is a 404."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery
from django.http import Http404, QueryDict
from django.utils import timezone

from accounts.models import User
from quizbank import selectors as bank_selectors
from quizbank.models import Question, Topic

from ..models import Activity, Bookmark, CodeReview, ReviewCard, ReviewUndo, Submission


class DeckKind(models.TextChoices):
    ALL = "all", "All due"
    TOPIC = "topic", "A topic"
    BOOKMARKS = "bookmarks", "Bookmarks"
    MISSED = "missed", "What you missed"


@dataclass(frozen=True)
class Deck:
    kind: str = DeckKind.ALL
    topic: Topic | None = None

    @property
    def query(self) -> str:
        """The deck as a URL query ("" for all due), for links that stay in the deck."""
        if self.kind == DeckKind.ALL:
            return ""
        params = {"deck": self.kind}
        if self.topic is not None:
            params["topic"] = self.topic.slug
        return urlencode(params)

    @property
    def label(self) -> str:
        if self.topic is not None:
            return self.topic.name
        return DeckKind(self.kind).label


def deck_parse(params: Any) -> Deck:
    """The deck a query names (`?deck=all|bookmarks|missed`, `?deck=topic&topic=<slug>`, or just
    `?topic=<slug>`); raises ValidationError naming the field and the reason."""
    kind = params.get("deck") or (DeckKind.TOPIC if params.get("topic") else DeckKind.ALL)
    if kind not in DeckKind.values:
        choices = ", ".join(DeckKind.values)
        raise ValidationError({"deck": f"No deck {kind!r}; choose one of {choices}."})
    if kind != DeckKind.TOPIC:
        return Deck(kind=kind)
    slug = params.get("topic") or ""
    if not slug:
        raise ValidationError({"topic": "Choose a topic for a topic deck."})
    topic = Topic.objects.filter(slug=slug).first()
    if topic is None:
        raise ValidationError({"topic": f"No topic {slug!r}."})
    return Deck(kind=kind, topic=topic)


def deck_questions(*, user: User, deck: Deck, now: Any = None) -> QuerySet[Question]:
    """The questions of `deck` the learner reviews now, in order, each annotated with its card's
    `card_due` (None: no card yet).

    - all due: every card due now, most overdue first;
    - a topic: the cards due now on questions of that topic;
    - bookmarks: the cards due now on bookmarked questions, then bookmarked questions never
      reviewed (new cards);
    - what you missed: every card whose latest review was a miss ("again": you rated it so, a
      quick check went wrong, a submission failed or you gave up), due or not, the one missed
      longest ago first; reviewing it well takes it out of the deck."""
    now = now or timezone.now()
    cards = ReviewCard.objects.filter(user=user, question=OuterRef("pk"))
    due = Exists(cards.filter(due__lte=now))
    questions = Question.objects.visible_to(user).annotate(
        card_due=Subquery(cards.values("due")[:1]),
        card_reviewed=Subquery(cards.values("last_review")[:1]),
    )
    order: list[Any] = [F("card_due").asc(nulls_last=True), "pk"]
    if deck.kind == DeckKind.ALL:
        questions = questions.filter(due)
    elif deck.kind == DeckKind.TOPIC:
        tagged = Question.topics.through.objects.filter(question=OuterRef("pk"), topic=deck.topic)
        questions = questions.filter(due).filter(Q(primary_topic=deck.topic) | Exists(tagged))
    elif deck.kind == DeckKind.BOOKMARKS:
        bookmarked = Exists(Bookmark.objects.filter(user=user, question=OuterRef("pk")))
        questions = questions.filter(bookmarked).filter(due | ~Exists(cards))
    else:
        questions = questions.filter(Exists(cards.filter(last_rating=Activity.Rating.AGAIN)))
        order = [F("card_reviewed").asc(nulls_first=True), "pk"]
    return questions.select_related("primary_topic").order_by(*order)


def deck_counts(*, user: User, now: Any = None) -> dict[str, int]:
    """How many questions each fixed deck holds now (the topic deck is counted when chosen)."""
    now = now or timezone.now()
    return {
        kind: deck_questions(user=user, deck=Deck(kind=kind), now=now).count()
        for kind in (DeckKind.ALL, DeckKind.BOOKMARKS, DeckKind.MISSED)
    }


def reviewed_today(*, user: User) -> int:
    """Cards reviewed today (in TIME_ZONE): ratings given in review sessions, the learner's own
    and the grader's for a code review; not a rating on a question's page, nor a wrong quick
    check or a failed submission outside review (practice that reschedules a card)."""
    start = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    return Activity.objects.filter(
        user=user, kind=Activity.Kind.RATING, in_review=True, created_at__gte=start
    ).count()


def review_question_get(*, user: User, slug: str) -> Question:
    """A question the learner may review: one they have a card for, or have bookmarked (a new
    card). Anything else, another learner's card included, is a 404."""
    question = bank_selectors.question_get(user=user, slug=slug)
    mine = {"user": user, "question": question}
    if not (ReviewCard.objects.filter(**mine).exists() or Bookmark.objects.filter(**mine).exists()):
        raise Http404("No such card in your reviews.")
    return question


def code_review_get(*, user: User, slug: str) -> CodeReview:
    """The learner's open review of the code question `slug`, else 404."""
    question = review_question_get(user=user, slug=slug)
    review = bank_selectors.select_question(
        CodeReview.objects.filter(user=user, question=question, ended_at=None)
    ).first()
    if review is None:
        raise Http404("You are not reviewing this question now.")
    return review


def code_review_of(*, submission: Submission) -> CodeReview | None:
    """The code review a submission was made in, if any: the one open at the time, or the one
    it ended. Example runs belong to none."""
    if submission.mode != Submission.Mode.SUBMIT:
        return None
    return (
        CodeReview.objects.filter(
            user=submission.user_id,
            question=submission.question_id,
            started_at__lte=submission.queued_at,
        )
        .filter(Q(ended_at=None) | Q(submission=submission))
        .order_by("-started_at")
        .first()
    )


def last_code(*, user: User, question: Question) -> Submission | None:
    """The learner's latest graded submission to a question, for "show my last code"."""
    return (
        Submission.objects.visible_to(user)
        .filter(question=question, mode=Submission.Mode.SUBMIT)
        .exclude(status__in=Submission.UNFINISHED)
        .first()
    )


def undo_get(*, user: User) -> ReviewUndo | None:
    """The learner's last rating in review, if it can still be undone."""
    undo = ReviewUndo.objects.filter(user=user)
    return bank_selectors.select_question(undo, "activity__question", "card").first()


def rating_get(*, user: User, pk: int) -> Activity:
    """One of the learner's own ratings (a review-log row), else 404."""
    activity = bank_selectors.select_question(
        Activity.objects.visible_to(user).filter(pk=pk, kind=Activity.Kind.RATING)
    ).first()
    if activity is None:
        raise Http404("No such rating of yours.")
    return activity


def code_review_after(*, review: CodeReview) -> dict[str, Any]:
    """What the review page shows once a code review ended by a pass: the deck's new count and
    the undo of the grader's rating (the verdict swaps them in place)."""
    try:
        deck = deck_parse(QueryDict(review.deck))
    except ValidationError:
        deck = Deck()
    user = review.user
    return {
        "deck": deck,
        "remaining": deck_questions(user=user, deck=deck).count(),
        "reviewed_today": reviewed_today(user=user),
        "undo": undo_get(user=user),
        "counts": deck_counts(user=user),
        "topics": bank_selectors.topic_list(),
    }
