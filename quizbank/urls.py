"""The root URLconf. The pages of each app are included by name; the API is the one router that
every app registers its viewsets on (quizbank/api_router.py)."""

from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from .api_router import router
from .health import health


def _page_urls():
    # Each local app that serves pages says where (AppConfig.url_prefix); the learner app's
    # pages sit at the root.
    for config in apps.get_app_configs():
        prefix = getattr(config, "url_prefix", None)
        if prefix is not None:
            yield path(prefix, include(f"{config.name}.urls"))


# The API docs pages (self-hosted Swagger UI and ReDoc) start themselves with an inline script and
# ReDoc uses a worker from a blob: URL; only these two pages get a policy that allows that.
DOCS_CSP = {
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
    path("api/", include((router.urls, "api"))),
    *_page_urls(),
]
