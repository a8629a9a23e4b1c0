"""Review scheduling: FSRS v6 as this site uses it. One home for the arithmetic that the services
(rating a card) and the pages (what each rating button would do) share; no database access."""

from __future__ import annotations

from datetime import datetime, time, timedelta

import fsrs
from django.utils import timezone

from .models import Activity, ReviewCard

Rating = Activity.Rating

# FSRS v6 with its default parameters: learning steps of 1 and 10 minutes, 90% desired retention.
# Fuzzing spreads reviews that would otherwise fall due on the same day.
SCHEDULER = fsrs.Scheduler()


def fsrs_card(card: ReviewCard) -> fsrs.Card:
    """The learner's card as FSRS's scheduler takes it (an unsaved one is new)."""
    return fsrs.Card(
        card_id=card.pk or 0,
        state=fsrs.State(card.state),
        step=card.step if card.pk else 0,
        stability=card.stability,
        difficulty=card.difficulty,
        due=card.due,
        last_review=card.last_review,
    )


def next_due(*, scheduled: datetime, rating: int, now: datetime) -> datetime:
    """When a card rated `rating` at `now` comes back. FSRS's own answer, except that a card rated
    "hard" is not shown again the same day (in TIME_ZONE): a short learning step after "hard"
    would bring back, minutes later, a question the learner has just recalled."""
    if rating != Rating.HARD:
        return scheduled
    today = timezone.localtime(now).date()
    tomorrow = timezone.make_aware(datetime.combine(today + timedelta(days=1), time.min))
    return max(scheduled, tomorrow)


def rate(card: ReviewCard, *, rating: int, now: datetime) -> None:
    """Apply a review rated `rating` at `now` to the card's fields (the caller saves it)."""
    scheduled, _ = SCHEDULER.review_card(fsrs_card(card), fsrs.Rating(rating), review_datetime=now)
    card.state = scheduled.state.value
    card.step = scheduled.step
    card.stability = scheduled.stability
    card.difficulty = scheduled.difficulty
    card.due = next_due(scheduled=scheduled.due, rating=rating, now=now)
    card.last_review = scheduled.last_review
    card.last_rating = rating
    card.reviews += 1


def intervals(*, card: ReviewCard, now: datetime | None = None) -> dict[str, timedelta]:
    """What each rating would do to the card: {"again": timedelta, ...} until its next review,
    for the rating buttons. FSRS fuzzes long intervals, so the real one may differ a little."""
    now = now or timezone.now()
    out = {}
    for rating in Rating:
        scheduled, _ = SCHEDULER.review_card(
            fsrs_card(card), fsrs.Rating(rating), review_datetime=now
        )
        out[rating.public_name] = next_due(scheduled=scheduled.due, rating=rating, now=now) - now
    return out
