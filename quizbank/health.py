"""`GET /health/`: what this web process can do, for a load balancer and for whoever runs the site.

The database answers or the status is 503. Search says whether it ranks by meaning too, or on full
text alone and why (the encoder's files missing or altered: quizbank/search/encoder.py); search
works either way, so that alone is not a failure. `manage.py check` warns of the same (W001),
from the files' presence only, without loading the model.
"""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from .search import encoder


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except DatabaseError as error:
        database = f"unavailable: {type(error).__name__}"
    search = encoder.status()
    body = {
        "database": database,
        "search": {
            "ranking": "full text and meaning" if search.available else "full text only",
            "encoder": search.detail,
        },
    }
    return JsonResponse(body, status=200 if database == "ok" else 503)


@checks.register()
def encoder_files(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    missing = encoder.missing_files()
    if not missing:
        return []
    return [
        checks.Warning(
            f"search will rank on full text only: {missing}",
            hint="install requirements/encoder.txt (make setup does)",
            id="quizbank.W001",
        )
    ]
