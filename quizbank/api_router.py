"""The one API router: every resource under /api/ is registered on it, so the API root lists them
all. Each app registers its own viewsets from its AppConfig.ready(); an app higher in the stack may
register a subclass for a prefix a lower app registered (the learner app's question list adds
the learner's own filters), and the later registration replaces the earlier one."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter


class ApiRouter(DefaultRouter):
    def register(self, prefix, viewset, basename=None):
        self.registry = [entry for entry in self.registry if entry[0] != prefix]
        super().register(prefix, viewset, basename)


router = ApiRouter()
