"""The root URLconf. The pages of each app are included by name; the API is the one router that
every app registers its viewsets on (quizbank/api_router.py)."""

from django.apps import apps
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from .api_router import router


def _page_urls():
    # Each local app that serves pages says where (AppConfig.url_prefix); the learner app's
    # pages sit at the root.
    for config in apps.get_app_configs():
        prefix = getattr(config, "url_prefix", None)
        if prefix is not None:
            yield path(prefix, include(f"{config.name}.urls"))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/", include((router.urls, "api"))),
    *_page_urls(),
]
