from django.apps import AppConfig


class QuizbankConfig(AppConfig):
    name = "quizbank"
    verbose_name = "Question bank"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import signals

        signals.connect()
