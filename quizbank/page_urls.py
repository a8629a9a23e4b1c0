from django.urls import path

from . import views

app_name = "quizbank"

urlpatterns = [
    path("", views.home, name="home"),
    path("questions/", views.question_list, name="question-list"),
    path("questions/<slug:slug>/", views.question_detail, name="question-detail"),
]
