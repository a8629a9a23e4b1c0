import os

from django.apps import apps
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizbank.settings")
application = get_wsgi_application()

# A web process is starting (runserver and gunicorn both load this module; management commands and
# tests do not): an app that needs something ready before the first request starts it now, through
# its AppConfig's `web_started()` (the learner app: its grading sandbox when it grades in-process).
for config in apps.get_app_configs():
    web_started = getattr(config, "web_started", None)
    if callable(web_started):
        web_started()
