from django.apps import AppConfig


class QuizbankConfig(AppConfig):
    name = "quizbank"
    verbose_name = "Question bank"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import health, signals  # noqa: F401 - health registers its system check

        signals.connect()
