from django.apps import AppConfig


class PracticeConfig(AppConfig):
    name = "practice"
    url_prefix = ""
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from quizbank.api_router import router

        from .api import review, views

        router.register("questions", views.LearnerQuestionViewSet, basename="question")
        router.register("quick-checks", views.QuickCheckViewSet, basename="quick-check")
        router.register("submissions", views.SubmissionViewSet, basename="submission")
        router.register("progress", views.ProgressViewSet, basename="progress")
        router.register("interviews", views.InterviewViewSet, basename="interview")
        router.register("plans", views.PlanViewSet, basename="plan")
        router.register("me", views.MeViewSet, basename="me")
        router.register("reviews", review.ReviewViewSet, basename="review")

    def web_started(self) -> None:
        """Without a broker this process grades in the request (embedded mode): its sandbox pool
        starts with the server, not on the first submission (quizbank/wsgi.py)."""
        from django.conf import settings

        if settings.CELERY_TASK_ALWAYS_EAGER:
            from . import grader_client

            grader_client.start_pools(["cpu"])
