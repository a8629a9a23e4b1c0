"""What verify_bank checks of the bank's standard (shared/bank/STANDARD.md) without running code."""

from __future__ import annotations

from quizbank.models import Question


def standard_problems(question: Question) -> list[str]:
    """Expects hints, quick checks, applications and the exercise to be loaded."""
    problems = []
    if len(question.concepts) < 2:
        problems.append("concepts: needs at least two")
    if len(question.hints.all()) < 2:
        problems.append("hints: needs at least two")
    if not question.applications.all():
        problems.append("applications: needs at least one")
    if question.kind == Question.Kind.CONCEPT and not question.quick_checks.all():
        problems.append("quick_checks: a concept question needs at least one")
    exercise = getattr(question, "exercise", None)
    if exercise is not None:
        if len(exercise.checks) < 4:
            problems.append("exercise.yaml: checks: needs at least four")
        if not any(c.get("visible") for c in exercise.checks):
            problems.append("exercise.yaml: checks: needs at least one visible example")
        if len(exercise.wrong_solutions) < 2:
            problems.append("wrong/: needs at least two plausible wrong solutions")
    return problems
