"""The root URLconf: every page and API route is one hop from here. Apps are included by dotted
string (the content app imports nothing of the learner app): the accounts pages, the learner's
pages at the root, and the whole API from practice/api/urls.py (the one router)."""

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from .health import health

# The API docs pages (self-hosted Swagger UI and ReDoc) start themselves with an inline script and
# ReDoc uses a worker from a blob: URL; only these two pages get a policy that allows that.
DOCS_CSP: dict[str, Any] = {
    **settings.SECURE_CSP,
    "script-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "worker-src": [CSP.SELF, "blob:"],
}


def _docs(view):
    return csp_override(DOCS_CSP)(view.as_view(url_name="schema"))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("health/", health, name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", _docs(SpectacularSwaggerView), name="api-docs"),
    path("api/redoc/", _docs(SpectacularRedocView), name="api-redoc"),
    path("api/", include("practice.api.urls")),
    path("accounts/", include("accounts.urls")),
    path("", include("practice.urls")),
]
