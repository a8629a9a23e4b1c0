from django.apps import AppConfig


class PracticeConfig(AppConfig):
    name = "practice"
    default_auto_field = "django.db.models.BigAutoField"

    def web_started(self) -> None:
        """Without a broker this process grades in the request (embedded mode): its sandbox pool
        starts with the server, not on the first submission (quizbank/wsgi.py)."""
        from django.conf import settings

        if settings.CELERY_TASK_ALWAYS_EAGER:
            from . import grader_client

            grader_client.start_pools(["cpu"])
