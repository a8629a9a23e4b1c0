"""Verifying a new version of an exercise on a grader worker (never in a web process with a
broker): the reference passes, the starter and every wrong solution fail (each diagnosed as
itself), the forbid list does not refuse the reference, and at least one check is visible. The
version goes live for learners only once verified (`quizbank.models.ExerciseVersion`)."""

from __future__ import annotations

import logging

from grader.jobs import JobError
from quizbank.models import ExerciseVersion

from .. import grader_client

log = logging.getLogger(__name__)

NO_VISIBLE_CHECK = (
    "checks: no check is visible; mark at least one `visible: true`, so learners can run the "
    "examples"
)
GRADER_FAILED = (
    "the grader itself failed while verifying (not the exercise's fault); press Verify to try again"
)


def exercise_version_verify(*, version_id: int) -> ExerciseVersion | None:
    """Grade the version's reference, starter and wrong solutions in the sandbox and store the
    answer: verified, or failed with one reason per problem. Safe to run again (a redelivered
    task): it verifies the same content and stores the same answer."""
    version = (
        ExerciseVersion.objects.select_related("exercise__question").filter(pk=version_id).first()
    )
    if version is None:
        return None
    slug = version.exercise.question.slug
    reasons = []
    if not any(check.get("visible") for check in version.checks):
        reasons.append(NO_VISIBLE_CHECK)
    version.verification_progress("grading the reference, the starter and the wrong solutions")
    try:
        files = grader_client.exercise_verify(version)
    except JobError as exc:
        reasons.append(f"exercise.yaml: the grader refuses this exercise: {exc}")
    else:
        for verdict in files:
            if verdict.result.get("grader_failed") and not verdict.result.get("exercise_fault"):
                reasons.append(GRADER_FAILED)
                break
            problem = verdict.problem()
            if problem is not None:
                reasons.append(problem)
    version.verification_finish(reasons=reasons)
    if reasons:
        log.warning("exercise %s version %s failed verification: %s", slug, version.number, reasons)
    else:
        log.info("exercise %s version %s verified", slug, version.number)
    return version
