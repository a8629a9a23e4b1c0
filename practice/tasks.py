from celery import shared_task
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from .services import submissions, sweep, verification

# Tasks have explicit names, so messages in the broker and the beat schedule in settings do not
# depend on where the code lives.

# A database restarting, read-only for a while, or a connection cut is transient: the task is
# tried again with backoff (1, 2, 4, ... at most 10 s apart, 15 times, about two minutes) instead
# of dropping its message. Grading is idempotent (services.submissions.submission_grade).
RETRIES = 15
BACKOFF_MAX = 10
# SQLSTATEs that pass: read-only transaction (a replica promoted, a read-only window), admin
# shutdown, cannot connect now (starting up), serialization failure, deadlock.
TRANSIENT_SQLSTATES = frozenset({"25006", "57P01", "57P02", "57P03", "40001", "40P01"})


def is_transient(error: BaseException) -> bool:
    if isinstance(error, OperationalError | InterfaceError):
        return True
    cause = error.__cause__
    return isinstance(error, DatabaseError) and getattr(cause, "sqlstate", None) in (
        TRANSIENT_SQLSTATES
    )


@shared_task(
    name="submissions.grade",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=150,
    time_limit=180,
    ignore_result=True,
    max_retries=RETRIES,
)
def grade_submission(self, submission_id: int) -> None:
    worker = getattr(self.request, "hostname", None) or "in-process"
    try:
        submissions.submission_grade(submission_id=submission_id, worker=worker)
    except DatabaseError as error:
        if not is_transient(error) or self.request.is_eager:
            raise
        # A fresh connection next time: this one may be broken, or still read-only.
        connection.close()
        countdown = min(2**self.request.retries, BACKOFF_MAX)
        raise self.retry(exc=error, countdown=countdown) from error


@shared_task(name="submissions.sweep", ignore_result=True, soft_time_limit=60, time_limit=90)
def sweep_submissions() -> dict[str, int]:
    return sweep.submission_sweep()


@shared_task(
    name="exercises.verify",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=600,
    time_limit=660,
    ignore_result=True,
)
def verify_exercise_version(version_id: int) -> None:
    verification.exercise_version_verify(version_id=version_id)
