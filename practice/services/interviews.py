"""Mock interviews: start one, take hints, answer the questions in order, finish.

The clock is the server's: every write first settles the interview, so once `ends_at` has passed
an answer or a hint is refused with TimeUp and the interview is over, whatever the page shows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Random
from django.utils import timezone

from accounts.models import User
from quizbank import errors
from quizbank.models import Hint, Question, Topic

from ..models import QuestionProgress
from ..models.interviews import (
    MAX_ANSWER_CHARS,
    InterviewQuestion,
    MockInterview,
)
from ..selectors import DIFFICULTY_ORDER
from . import dispatch, learning, submissions

Outcome = InterviewQuestion.Outcome


@dataclass(frozen=True)
class Preset:
    """A named interview: questions whose primary topic is one of `topics` (a question merely
    tagged with one is about something else), `code` of them code exercises, the rest concept."""

    title: str
    topics: tuple[str, ...]
    difficulty: tuple[str, ...]
    questions: int
    code: int
    minutes: int

    @property
    def concept(self) -> int:
        return self.questions - self.code

    def params(self) -> dict[str, Any]:
        """interview_create's arguments for this preset."""
        return {
            "topics": list(Topic.objects.filter(slug__in=self.topics)),
            "difficulty": list(self.difficulty),
            "questions": self.questions,
            "minutes": self.minutes,
            "title": self.title,
            "primary_topic_only": True,
            "code": self.code,
        }


PRESETS = {
    "fundamentals-screen": Preset(
        title="30-minute fundamentals screen",
        topics=("fundamentals", "tensors", "autograd", "nn"),
        difficulty=("easy", "medium"),
        questions=4,
        code=1,
        minutes=30,
    ),
    "llm-engineer-loop": Preset(
        title="60-minute LLM engineer loop",
        topics=("llm", "gpu", "training", "distributed"),
        difficulty=("medium", "hard"),
        questions=6,
        code=2,
        minutes=60,
    ),
}


class TimeUp(Exception):
    """The interview's time ran out (or it was finished): it takes no more answers."""

    def __init__(self, interview: MockInterview):
        super().__init__("Time is up: this interview is over.")
        self.interview = interview


class InterviewLimitReached(errors.LimitReached):
    """The learner started as many interviews today as a day allows; `retry_after` seconds
    until the day ends."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__("interviews", message, retry_after=retry_after)


def _check_daily_limit(*, user: User) -> None:
    now = timezone.localtime()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    started = MockInterview.objects.filter(user=user, started_at__gte=midnight).count()
    if started >= settings.INTERVIEWS_PER_DAY:
        raise InterviewLimitReached(
            f"You started {started} interviews today, the most a day allows; start the next "
            "one tomorrow.",
            retry_after=int((midnight + timedelta(days=1) - now).total_seconds()) + 1,
        )


@transaction.atomic
def interview_create(
    *,
    user: User,
    topics: list[Topic],
    difficulty: list[str],
    questions: int,
    minutes: int,
    title: str = "",
    primary_topic_only: bool = False,
    code: int | None = None,
) -> MockInterview:
    """Start an interview of up to `questions` published questions from `topics` (any if empty;
    only as primary topic with `primary_topic_only`) at the given difficulties (any if empty),
    ones the learner has not solved first, asked easiest first. With `code`, that many are code
    questions and the rest concept ones, as far as the bank has them (the other kind makes up a
    shortfall). Fewer questions than asked for when fewer match; none is a ValidationError.
    Past INTERVIEWS_PER_DAY started today, raises InterviewLimitReached."""
    # The learner's row first (the one lock this takes): two starts at once are counted one
    # after the other, so the day's limit holds. The rows it inserts point at shared questions and
    # topics, which nobody locks beyond a key-share (the FK checks): no other learner waits.
    dispatch.user_lock(user.pk)
    _check_daily_limit(user=user)
    candidates = Question.objects.published()
    if topics and primary_topic_only:
        candidates = candidates.filter(primary_topic__in=topics)
    elif topics:
        candidates = candidates.filter(
            pk__in=Question.objects.filter(topics__in=topics).values("pk")
        )
    if difficulty:
        candidates = candidates.filter(difficulty__in=difficulty)
    solved = QuestionProgress.objects.filter(
        user=user, question=OuterRef("pk"), state=QuestionProgress.State.SOLVED
    )
    shuffled = candidates.annotate(solved=Exists(solved), shuffle=Random()).order_by(
        "solved", "shuffle"
    )
    if code is None:
        chosen = list(shuffled.values_list("pk", flat=True)[:questions])
    else:
        is_code = {"kind": Question.Kind.CODE}
        coded = list(shuffled.filter(**is_code).values_list("pk", flat=True)[:questions])
        concept = list(shuffled.exclude(**is_code).values_list("pk", flat=True)[:questions])
        take_code = min(len(coded), max(code, questions - len(concept)))
        chosen = coded[:take_code] + concept[: questions - take_code]
    if not chosen:
        raise ValidationError({"topics": "No published question matches these topics and levels."})
    now = timezone.now()
    interview = MockInterview(
        user=user,
        title=title,
        difficulty=list(difficulty),
        minutes=minutes,
        started_at=now,
        ends_at=now + timedelta(minutes=minutes),
    )
    interview.full_clean()
    interview.save()
    interview.topics.set(topics)
    ordered = (
        Question.objects.filter(pk__in=chosen)
        .annotate(level=DIFFICULTY_ORDER)
        .order_by("level", "primary_topic__order", "slug")
    )
    InterviewQuestion.objects.bulk_create(
        InterviewQuestion(interview=interview, question=question, order=i)
        for i, question in enumerate(ordered, start=1)
    )
    return interview


def interview_settle(*, interview: MockInterview, now: datetime | None = None) -> MockInterview:
    """Finish an interview whose time has run out, and withdraw the questions not answered yet
    that were unpublished since it started (the learner never sees what the bank no longer
    shows). Every read and write calls this first."""
    now = now or timezone.now()
    if interview.active:
        for item in interview.items.all():
            if not item.done and item.question.status != Question.Status.PUBLISHED:
                item.outcome = InterviewQuestion.Outcome.WITHDRAWN
                item.answered_at = now
                item.save(update_fields=["outcome", "answered_at"])
    if interview.active and now >= interview.ends_at:
        interview.finish(now=now)
    return interview


def interview_settle_expired(*, user: User, now: datetime | None = None) -> int:
    """Settle every interview of `user` whose time ran out, in one query (for the list)."""
    now = now or timezone.now()
    return (
        MockInterview.objects.filter(user=user, status=MockInterview.Status.ACTIVE)
        .filter(ends_at__lte=now)
        .update(status=MockInterview.Status.TIMED_OUT, finished_at=F("ends_at"))
    )


@transaction.atomic
def interview_finish(*, interview: MockInterview) -> MockInterview:
    interview = _locked(interview)
    interview.finish()
    return interview


def _locked(interview: MockInterview) -> MockInterview:
    locked = MockInterview.objects.select_for_update().get(pk=interview.pk)
    return interview_settle(interview=locked)


def _current(interview: MockInterview, question: Question) -> InterviewQuestion:
    """The interview's current question (the first not answered yet), which must be `question`:
    questions come in order, and an answer posted twice is not taken twice."""
    item = (
        interview.items.select_for_update()
        .filter(answered_at__isnull=True)
        .order_by("order")
        .first()
    )
    if item is None:
        raise ValidationError({"question": "Every question is answered: finish the interview."})
    if item.question_id != question.pk:
        raise ValidationError(
            {"question": f"Answer question {item.order} first; questions come in order."}
        )
    return item


def interview_hint(*, interview: MockInterview, question: Question) -> Hint:
    """Reveal the next hint of the current question; each costs points in the report."""
    with transaction.atomic():
        interview = _locked(interview)
        if interview.active:
            return _hint(interview, question)
    # Outside the block, so that the interview stays finished.
    raise TimeUp(interview)


def _hint(interview: MockInterview, question: Question) -> Hint:
    item = _current(interview, question)
    hint = question.hints.filter(order__gt=item.hints_used).order_by("order").first()
    if hint is None:
        raise ValidationError({"question": "This question has no more hints."})
    item.hints_used = hint.order
    item.save(update_fields=["hints_used"])
    return hint


def interview_answer(
    *,
    interview: MockInterview,
    question: Question,
    text: str = "",
    checks: dict[int, Any] | None = None,
    code: str = "",
    skip: bool = False,
) -> InterviewQuestion:
    """Answer the current question and move on. A concept question takes free text (kept for
    the report) and answers to its quick checks, graded at once and recorded as practice; a code
    question takes code, graded as a submission. Raises TimeUp once the time has run out."""
    with transaction.atomic():
        interview = _locked(interview)
        if interview.active:
            return _answer(interview, question, text=text, checks=checks, code=code, skip=skip)
    raise TimeUp(interview)


def _answer(
    interview: MockInterview,
    question: Question,
    *,
    text: str,
    checks: dict[int, Any] | None,
    code: str,
    skip: bool,
) -> InterviewQuestion:
    item = _current(interview, question)
    now = timezone.now()
    if len(text) > MAX_ANSWER_CHARS:
        raise ValidationError({"text": f"An answer holds at most {MAX_ANSWER_CHARS} characters."})
    user = interview.user
    if skip:
        item.outcome = Outcome.SKIPPED
    elif question.kind == Question.Kind.CODE:
        item.submission = submissions.submission_create(user=user, question=question, code=code)
        item.outcome = Outcome.PENDING
    else:
        item.answer_text = text.strip()
        _grade_checks(item, user=user, question=question, responses=checks or {})
    previous = interview.items.filter(answered_at__isnull=False).order_by("-order").first()
    # Questions come in order, so a question's time runs from the previous answer (or the start).
    since = previous.answered_at if previous and previous.answered_at else interview.started_at
    item.answered_at = now
    item.time_spent = now - since
    item.full_clean()
    item.save()
    return item


def _grade_checks(
    item: InterviewQuestion, *, user: User, question: Question, responses: dict[int, Any]
) -> None:
    checks = list(question.quick_checks.all())
    correct = 0
    for check in checks:
        response = responses.get(check.pk)
        if response is None:
            continue  # unanswered counts as wrong, and is not practice to record
        result = learning.quick_check_answer(user=user, check=check, response=response)
        correct += bool(result["correct"])
    item.checks_total, item.checks_correct = len(checks), correct
    if checks:
        if correct == len(checks):
            item.outcome = Outcome.PASSED
        else:
            item.outcome = Outcome.PARTIAL if correct else Outcome.FAILED
    else:
        item.outcome = Outcome.ANSWERED if item.answer_text else Outcome.SKIPPED
