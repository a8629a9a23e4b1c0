from django.urls import path

from . import views

app_name = "practice"

urlpatterns = [
    path("questions/<slug:slug>/hints/<int:order>/", views.hint_reveal, name="hint-reveal"),
    path("questions/<slug:slug>/answer/", views.answer_reveal, name="answer-reveal"),
    path(
        "questions/<slug:slug>/checks/<int:pk>/",
        views.quick_check_answer,
        name="quick-check-answer",
    ),
    path("questions/<slug:slug>/rate/", views.rate, name="rate"),
    path("questions/<slug:slug>/bookmark/", views.bookmark, name="bookmark"),
    path("questions/<slug:slug>/note/", views.note, name="note"),
    path("questions/<slug:slug>/submissions/", views.submit, name="submit"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission-detail"),
    path("review/", views.review, name="review"),
    path("progress/", views.progress, name="progress"),
]
