"""The learner app's models, by subject: code submissions, what a learner does with questions
(learning), mock interviews, study plans and review sessions."""

from .interviews import InterviewQuestion, MockInterview
from .learning import (
    MAX_NOTE_CHARS,
    Activity,
    Bookmark,
    Note,
    OwnedQuerySet,
    QuestionProgress,
    ReviewCard,
)
from .plans import PlanEnrollment, PlanItem, PlanSection, StudyPlan
from .review import CodeReview, ReviewUndo
from .submissions import MAX_CODE_BYTES, MAX_TRIES, Submission, SubmissionQuerySet

__all__ = [
    "MAX_CODE_BYTES",
    "MAX_NOTE_CHARS",
    "MAX_TRIES",
    "Activity",
    "Bookmark",
    "CodeReview",
    "InterviewQuestion",
    "MockInterview",
    "Note",
    "OwnedQuerySet",
    "PlanEnrollment",
    "PlanItem",
    "PlanSection",
    "QuestionProgress",
    "ReviewCard",
    "ReviewUndo",
    "StudyPlan",
    "Submission",
    "SubmissionQuerySet",
]
