"""The site's URLconf plus one view that fails, for the error-page tests (500.html links to the
site's pages, so it needs their names)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from quizbank.urls import urlpatterns as site_urlpatterns


def fails(request: HttpRequest) -> HttpResponse:
    return HttpResponse(str(1 // 0))


urlpatterns = [path("fails/", fails), *site_urlpatterns]
