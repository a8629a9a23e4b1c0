"""The learner app's models, by subject: what a learner does with questions (learning), mock
interviews and study plans."""

from .interviews import InterviewQuestion, MockInterview
from .learning import (
    MAX_CODE_BYTES,
    MAX_NOTE_CHARS,
    MAX_TRIES,
    Activity,
    Bookmark,
    Note,
    OwnedQuerySet,
    QuestionProgress,
    ReviewCard,
    Submission,
    SubmissionQuerySet,
)

__all__ = [
    "MAX_CODE_BYTES",
    "MAX_NOTE_CHARS",
    "MAX_TRIES",
    "Activity",
    "Bookmark",
    "InterviewQuestion",
    "MockInterview",
    "Note",
    "OwnedQuerySet",
    "QuestionProgress",
    "ReviewCard",
    "Submission",
    "SubmissionQuerySet",
]
