from django.apps import AppConfig


class QuizbankConfig(AppConfig):
    name = "quizbank"
    verbose_name = "Question bank"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import health, signals  # noqa: F401 - health registers its system check
        from .api import views
        from .api_router import router

        router.register("questions", views.QuestionViewSet, basename="question")
        router.register("topics", views.TopicViewSet, basename="topic")
        router.register("applications", views.ApplicationViewSet, basename="application")
        signals.connect()
