from celery import shared_task
from django.db import InterfaceError, OperationalError

from .services import submissions

# Tasks have explicit names, so messages in the broker and the beat schedule in settings do not
# depend on where the code lives.

# A database restarting, read-only for a while, or a connection cut: transient, so the task is
# tried again with backoff (1, 2, 4, ... at most 10 s apart, for about two minutes) instead of
# dropping its message. Grading is idempotent (services.submissions.submission_grade).
TRANSIENT_ERRORS = (OperationalError, InterfaceError)


@shared_task(
    name="submissions.grade",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=150,
    time_limit=180,
    ignore_result=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=1,
    retry_backoff_max=10,
    retry_jitter=False,
    max_retries=15,
)
def grade_submission(submission_id: int) -> None:
    from celery import current_task

    worker = getattr(current_task.request, "hostname", None) or "in-process"
    submissions.submission_grade(submission_id=submission_id, worker=worker)


@shared_task(name="submissions.sweep", ignore_result=True, soft_time_limit=60, time_limit=90)
def sweep_submissions() -> dict[str, int]:
    return submissions.submission_sweep()
