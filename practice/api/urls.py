from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("submissions", views.SubmissionViewSet, basename="submission")

urlpatterns = [
    path("progress/", views.ProgressView.as_view(), name="progress"),
    *router.urls,
]
