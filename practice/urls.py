from django.urls import path

from .views import actions, interviews, pages, plans, review

app_name = "practice"

urlpatterns = [
    path("", pages.home, name="home"),
    path("questions/", pages.question_list, name="question-list"),
    path("questions/<slug:slug>/", pages.question_detail, name="question-detail"),
    path("questions/<slug:slug>/hints/<int:order>/", actions.hint_reveal, name="hint-reveal"),
    path("questions/<slug:slug>/answer/", actions.answer_reveal, name="answer-reveal"),
    path(
        "questions/<slug:slug>/checks/<int:pk>/",
        actions.quick_check_answer,
        name="quick-check-answer",
    ),
    path("questions/<slug:slug>/rate/", actions.rate, name="rate"),
    path("questions/<slug:slug>/bookmark/", actions.bookmark, name="bookmark"),
    path("questions/<slug:slug>/note/", actions.note, name="note"),
    path("questions/<slug:slug>/submissions/", actions.submit, name="submit"),
    path("submissions/<int:pk>/", actions.submission_detail, name="submission-detail"),
    path("review/", review.review, name="review"),
    path("review/undo/", review.undo, name="review-undo"),
    path("review/<slug:slug>/rate/", review.rate, name="review-rate"),
    path("review/<slug:slug>/hint/", review.hint, name="review-hint"),
    path("review/<slug:slug>/give-up/", review.give_up, name="review-give-up"),
    path("progress/", pages.progress, name="progress"),
    path("plans/", plans.plan_list, name="plan-list"),
    path("plans/<slug:slug>/", plans.plan_detail, name="plan-detail"),
    path("plans/<slug:slug>/start/", plans.plan_start, name="plan-start"),
    path("interviews/", interviews.interview_list, name="interview-list"),
    path("interviews/new/", interviews.interview_new, name="interview-new"),
    path("interviews/<int:pk>/", interviews.interview_detail, name="interview-detail"),
    path("interviews/<int:pk>/answer/", interviews.interview_answer, name="interview-answer"),
    path("interviews/<int:pk>/hint/", interviews.interview_hint, name="interview-hint"),
    path("interviews/<int:pk>/finish/", interviews.interview_finish, name="interview-finish"),
]
