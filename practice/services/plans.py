"""Study plans: load them from their files (fixtures/plans/<slug>.yaml), write them back, and
start one.

A plan file holds `title`, `description`, an optional `order`, and `sections`: each a `title`, an
optional `description` and the `questions` (bank slugs) in order. Loading is all or nothing, like
the bank's: every problem is reported as `path: field: reason` and nothing is written. Plans
name questions, so they load after the bank (`load_bank`, then `load_plans`); the content app
never learns that plans exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.db import transaction

from accounts.models import User
from quizbank.bank.files import dump_yaml
from quizbank.bank.sync import BankError
from quizbank.models import Question

from ..models import PlanEnrollment, PlanItem, PlanSection, StudyPlan

PLAN_KEYS = {"title", "description", "order", "sections"}
SECTION_KEYS = {"title", "description", "questions"}


def _plan_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.glob("*.yaml")) if path.is_dir() else [path])
    return files


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _plan_errors(data: Any, known: set[str]) -> list[tuple[str, str]]:
    if not isinstance(data, dict):
        return [("(file)", "must be a mapping")]
    errors = [(key, "unknown field") for key in sorted(set(data) - PLAN_KEYS)]
    for key in ("title", "description"):
        if not _text(data.get(key)):
            errors.append((key, "is required text"))
    if "order" in data and (not isinstance(data["order"], int) or data["order"] < 0):
        errors.append(("order", "must be a whole number from 0"))
    sections = data.get("sections")
    if not isinstance(sections, list) or not sections:
        return [*errors, ("sections", "must be a non-empty list")]
    seen: set[str] = set()
    for i, section in enumerate(sections, start=1):
        where = f"sections[{i}]"
        if not isinstance(section, dict):
            errors.append((where, "must be a mapping"))
            continue
        errors += [(f"{where}.{k}", "unknown field") for k in sorted(set(section) - SECTION_KEYS)]
        if not _text(section.get("title")):
            errors.append((f"{where}.title", "is required text"))
        if "description" in section and not isinstance(section["description"], str):
            errors.append((f"{where}.description", "must be text"))
        slugs = section.get("questions")
        if not isinstance(slugs, list) or not slugs:
            errors.append((f"{where}.questions", "must be a non-empty list of question slugs"))
            continue
        for slug in slugs:
            if not isinstance(slug, str) or slug not in known:
                errors.append((f"{where}.questions", f"no question with the slug {slug!r}"))
            elif slug in seen:
                errors.append((f"{where}.questions", f"{slug!r} is already in this plan"))
            seen.add(str(slug))
    return errors


def plan_record(plan: StudyPlan) -> dict[str, Any]:
    """A plan as its file holds it."""
    record: dict[str, Any] = {
        "title": plan.title,
        "order": plan.order,
        "description": plan.description,
        "sections": [],
    }
    for section in plan.sections.all():
        entry: dict[str, Any] = {"title": section.title}
        if section.description:
            entry["description"] = section.description
        entry["questions"] = [item.question.slug for item in section.items.all()]
        record["sections"].append(entry)
    return record


def _normal(data: dict[str, Any]) -> dict[str, Any]:
    """A file's plan in plan_record's shape, to tell an unchanged plan from a changed one."""
    return {
        "title": data["title"].strip(),
        "order": data.get("order", 0),
        "description": data["description"],
        "sections": [
            {
                "title": s["title"].strip(),
                **({"description": s["description"]} if s.get("description") else {}),
                "questions": list(s["questions"]),
            }
            for s in data["sections"]
        ],
    }


def _plans_queryset():
    return StudyPlan.objects.prefetch_related("sections__items__question")


@transaction.atomic
def plans_load(*, paths: list[Path]) -> dict[str, list[str]]:
    """Upsert the plans in `paths` (plan files or folders of them) by slug (the file's name).
    Raises BankError listing every problem; then nothing is written."""
    known = set(Question.objects.values_list("slug", flat=True))
    errors: list[str] = []
    plans: dict[str, dict[str, Any]] = {}
    for path in _plan_files(paths):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            errors.append(f"{path}: (file): {exc}")
            continue
        errors += [f"{path}: {field}: {reason}" for field, reason in _plan_errors(data, known)]
        plans[path.stem] = data
    if errors:
        raise BankError(errors)
    existing = {plan.slug: plan for plan in _plans_queryset().filter(slug__in=plans)}
    questions = {q.slug: q for q in Question.objects.only("pk", "slug")}
    report: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    for slug, data in sorted(plans.items()):
        wanted = _normal(data)
        plan = existing.get(slug)
        if plan is not None and plan_record(plan) == wanted:
            report["unchanged"].append(slug)
            continue
        report["updated" if plan else "created"].append(slug)
        plan, _ = StudyPlan.objects.update_or_create(
            slug=slug,
            defaults={
                "title": wanted["title"],
                "description": wanted["description"],
                "order": wanted["order"],
            },
        )
        plan.sections.all().delete()
        for order, section in enumerate(wanted["sections"], start=1):
            row = PlanSection.objects.create(
                plan=plan,
                order=order,
                title=section["title"],
                description=section.get("description", ""),
            )
            PlanItem.objects.bulk_create(
                PlanItem(section=row, question=questions[q], order=i)
                for i, q in enumerate(section["questions"], start=1)
            )
    return report


def plans_export(*, path: Path) -> int:
    """Write every plan to `path`/<slug>.yaml in the format plans_load reads."""
    path.mkdir(parents=True, exist_ok=True)
    count = 0
    for plan in _plans_queryset():
        (path / f"{plan.slug}.yaml").write_text(dump_yaml(plan_record(plan)), encoding="utf-8")
        count += 1
    return count


def plan_start(*, user: User, plan: StudyPlan) -> PlanEnrollment:
    """Follow a plan (again: starting it twice is one enrollment)."""
    enrollment, _ = PlanEnrollment.objects.get_or_create(user=user, plan=plan)
    return enrollment
