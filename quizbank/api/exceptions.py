"""The API's one exception handler (settings: REST_FRAMEWORK["EXCEPTION_HANDLER"]).

Services raise Django's ValidationError and quizbank.errors' exceptions; this is the one place that
turns them into DRF's responses, so viewsets call services without try/except."""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler

from quizbank import errors
from quizbank.http import RETRY_AFTER_SECONDS


class ConflictError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class UnavailableError(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "unavailable"


def exception_handler(exc: Exception, context: dict[str, Any]):
    if isinstance(exc, errors.LimitReached):
        message = next(iter(exc.message_dict.values()))[0]
        exc = exceptions.Throttled(wait=exc.retry_after, detail=message)
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    elif isinstance(exc, errors.Conflict):
        exc = ConflictError({exc.field: [str(exc)]})
    elif isinstance(exc, errors.Unavailable):
        response = drf_exception_handler(UnavailableError(str(exc)), context)
        if response is not None:
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return drf_exception_handler(exc, context)
