"""What services raise when a request cannot be done, in the web's own terms and free of DRF.

Services raise Django's ``ValidationError`` for bad input (400, per field) and these for the rest;
the API's one exception handler (``quizbank/api/exceptions.py``) turns each into its response, so
no viewset translates a service's exception itself (the HackSoft styleguide's approach).
"""

from django.core.exceptions import ValidationError


class LimitReached(ValidationError):
    """A learner's budget is spent (submissions, interviews a day): nothing was done. A 429 with
    ``Retry-After: retry_after`` seconds, the message keyed by the field that is limited."""

    def __init__(self, field: str, message: str, *, retry_after: int) -> None:
        super().__init__({field: message})
        self.retry_after = retry_after


class Conflict(Exception):
    """The request is valid but the object's state refuses it now (a 409); ``field`` names what
    the client sent that conflicts."""

    field = "detail"


class Unavailable(Exception):
    """A service the request needs is away for a while; nothing was stored (a 503 with
    Retry-After)."""
