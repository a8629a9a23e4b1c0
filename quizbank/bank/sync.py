"""Moving the bank between its files and the database: `bank_load` and `bank_export`."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from ..models import Application, Exercise, Hint, Question, QuickCheck, Topic
from ..search import semantic
from . import files, schema


class BankError(Exception):
    """The bank on disk is invalid; `errors` holds one `path: field: reason` line per problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(f"{len(errors)} problem(s) in the bank")
        self.errors = errors


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # Edited in the admin since the last import, and differing from the files: left as they are.
    kept: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (
            f"{len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged"
        )
        return text + (f", {len(self.kept)} kept" if self.kept else "")

    def conflicts(self) -> list[str]:
        return [
            f"{slug}: edited in the admin since the last import; kept (use --force to take the "
            "files)"
            for slug in self.kept
        ]


def digest(record: dict[str, Any]) -> str:
    """The hash of a canonical record: what an import fingerprints, and what a row is compared
    with to tell whether it was edited since."""
    text = json.dumps(_numbers(record), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _numbers(value: Any) -> Any:
    """Whole floats as ints: a file's `time_limit: 20` is the database's 20.0, and the two
    compare equal, so they must hash equal too."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers(item) for item in value]
    return value


# --- canonical form: the one shape both the files and the database are compared in -------------


def _canonical_quick_check(check: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": check["kind"], "question": check["question"]}
    if check["kind"] != "predict":
        out["choices"] = list(check.get("choices") or [])
    answer = check["answer"]
    out["answer"] = str(answer) if check["kind"] == "predict" else answer
    out["explanation"] = check["explanation"]
    return out


def _canonical_check(check: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": check["name"]}
    if check.get("visible"):
        out["visible"] = True
    if check.get("requires"):
        out["requires"] = check["requires"]
    if check.get("seed"):
        out["seed"] = check["seed"]
    out["code"] = check["code"]
    out["compare"] = check["compare"]
    for key in ("rtol", "atol"):
        if check.get(key) is not None:
            out[key] = check[key]
    return out


def canonical(record: dict[str, Any], topic_order: dict[str, int]) -> dict[str, Any]:
    """The record with defaults dropped and unordered lists sorted: equal content compares equal."""
    meta = record["question"]
    primary, *rest = meta["topics"]
    question: dict[str, Any] = {
        "title": meta["title"],
        "difficulty": meta["difficulty"],
        "kind": meta["kind"],
        "status": meta["status"],
        "topics": [
            primary,
            *sorted(set(rest) - {primary}, key=lambda s: (topic_order.get(s, 0), s)),
        ],
        "applications": sorted(set(meta["applications"])),
        "concepts": list(meta["concepts"]),
        "prompt": meta["prompt"],
        "why_asked": meta["why_asked"],
        "hints": list(meta["hints"]),
    }
    if meta.get("asked_as"):
        question["asked_as"] = list(meta["asked_as"])
    if meta.get("quick_checks"):
        question["quick_checks"] = [_canonical_quick_check(c) for c in meta["quick_checks"]]
    out: dict[str, Any] = {
        "slug": record["slug"],
        "question": question,
        "answer": record["answer"],
        "exercise": None,
    }
    exercise = record.get("exercise")
    if exercise:
        em = exercise["meta"]
        ex_meta: dict[str, Any] = {"queue": em["queue"]}
        if float(em.get("time_limit", schema.DEFAULT_TIME_LIMIT)) != schema.DEFAULT_TIME_LIMIT:
            ex_meta["time_limit"] = em["time_limit"]
        if int(em.get("memory_limit_mb", schema.DEFAULT_MEMORY_LIMIT_MB)) != (
            schema.DEFAULT_MEMORY_LIMIT_MB
        ):
            ex_meta["memory_limit_mb"] = em["memory_limit_mb"]
        if em.get("forbid"):
            ex_meta["forbid"] = list(em["forbid"])
        if em.get("mutant_waivers"):
            ex_meta["mutant_waivers"] = dict(sorted(em["mutant_waivers"].items()))
        ex_meta["checks"] = [_canonical_check(c) for c in em["checks"]]
        out["exercise"] = {
            "meta": ex_meta,
            "starter_code": exercise["starter_code"],
            "solution_code": exercise["solution_code"],
            "wrong_solutions": dict(sorted(exercise["wrong_solutions"].items())),
        }
    return out


def record_from_question(question: Question) -> dict[str, Any]:
    """The question as a record. Expects topics, applications, hints, quick checks and the exercise
    to be prefetched (see `_questions_for_sync`)."""
    topics = [question.primary_topic.slug] + [
        t.slug for t in question.topics.all() if t.pk != question.primary_topic_id
    ]
    meta: dict[str, Any] = {
        "title": question.title,
        "difficulty": question.difficulty,
        "kind": question.kind,
        "status": question.status,
        "topics": topics,
        "applications": [a.slug for a in question.applications.all()],
        "concepts": question.concepts,
        "prompt": question.prompt,
        "why_asked": question.why_asked,
        "hints": [h.text for h in question.hints.all()],
        "quick_checks": [
            {
                "kind": c.kind,
                "question": c.prompt,
                "choices": c.choices,
                "answer": c.answer,
                "explanation": c.explanation,
            }
            for c in question.quick_checks.all()
        ],
    }
    if question.asked_as:
        meta["asked_as"] = list(question.asked_as)
    exercise = getattr(question, "exercise", None)
    record = {"slug": question.slug, "question": meta, "answer": question.answer, "exercise": None}
    if exercise is not None:
        record["exercise"] = {
            "meta": {
                "queue": exercise.queue,
                "time_limit": exercise.time_limit,
                "memory_limit_mb": exercise.memory_limit_mb,
                "forbid": exercise.forbid,
                "mutant_waivers": exercise.mutant_waivers,
                "checks": exercise.checks,
            },
            "starter_code": exercise.starter_code,
            "solution_code": exercise.solution_code,
            "wrong_solutions": exercise.wrong_solutions,
        }
    return record


def _questions_for_sync() -> Any:
    return Question.objects.select_related("primary_topic", "exercise").prefetch_related(
        "topics", "applications", "hints", "quick_checks"
    )


# --- load -------------------------------------------------------------------------------------


def _record_errors(bank: files.Bank, topics: set[str], applications: set[str]) -> list[str]:
    lines = []
    for record in bank.records:
        for where, reason in schema.record_errors(record, topics=topics, applications=applications):
            filename, _, field_name = where.partition(": ")
            lines.append(f"{record['path'] / filename}: {field_name or '(file)'}: {reason}")
    return lines + _shared_asked_as(bank)


def _shared_asked_as(bank: files.Bank) -> list[str]:
    """An asked_as line two questions share: search cannot tell them apart by it (semantic.py
    leaves such a passage out), and it must fit one of them better."""
    owner: dict[str, str] = {}
    lines = []
    for record in bank.records:
        meta = record.get("question")
        asked = meta.get("asked_as") if isinstance(meta, dict) else None
        for i, line in enumerate(asked if isinstance(asked, list) else []):
            if not isinstance(line, str):
                continue
            first = owner.setdefault(schema.asked_as_key(line), record["slug"])
            if first != record["slug"]:
                lines.append(
                    f"{record['path'] / 'question.yaml'}: asked_as[{i}]: {first} has the same"
                    " line; keep it where it fits best"
                )
    return lines


def bank_load(*, paths: list[Path], force: bool = False) -> LoadReport:
    """Upsert the questions under `paths` by slug, all or nothing.

    Raises BankError listing every problem found; the database is then untouched. Loading the same
    files twice changes nothing the second time (no new history rows either). A question edited
    in the admin since its last import (its content no longer hashes to the import's
    fingerprint) and differing from the files is kept as it is and reported, unless `force`.
    Exercises loaded become a new verified version: CI's verify_bank verifies the bank's files.

    When not one file changed since the last load, nothing is read, validated or written: each
    question is only compared with its fingerprint, to report those edited in the admin."""
    if not force:
        quick = _load_unchanged(paths)
        if quick is not None:
            return quick
    bank = files.read_bank(paths)
    if bank.taxonomy is not None:
        topic_slugs = {t["slug"] for t in bank.taxonomy["topics"]}
        application_slugs = {a["slug"] for a in bank.taxonomy["applications"]}
    else:
        topic_slugs = set(Topic.objects.values_list("slug", flat=True))
        application_slugs = set(Application.objects.values_list("slug", flat=True))
    errors = bank.errors + _record_errors(bank, topic_slugs, application_slugs)
    if errors:
        raise BankError(errors)

    report = LoadReport()
    with transaction.atomic():
        if bank.taxonomy is not None:
            _upsert_taxonomy(bank.taxonomy)
        topics = {t.slug: t for t in Topic.objects.all()}
        applications = {a.slug: a for a in Application.objects.all()}
        topic_order = {slug: t.order for slug, t in topics.items()}
        existing = {
            q.slug: q
            for q in _questions_for_sync().filter(slug__in=[r["slug"] for r in bank.records])
        }
        changed = []
        fingerprints = []  # (question, digest) for rows that already hold the files' content
        for record in bank.records:
            wanted = canonical(record, topic_order)
            wanted_digest = digest(wanted)
            question = existing.get(record["slug"])
            if question is None:
                changed.append((wanted, question))
                continue
            current = digest(canonical(record_from_question(question), topic_order))
            if current == wanted_digest:
                report.unchanged.append(record["slug"])
                if question.bank_digest != wanted_digest:  # e.g. an edit exported and committed
                    fingerprints.append((question, wanted_digest))
                continue
            # Without a fingerprint (imported before they were kept) the files win, as they did.
            edited = bool(question.bank_digest) and current != question.bank_digest
            if edited and not force:
                report.kept.append(record["slug"])
                continue
            changed.append((wanted, question))
        for question, fingerprint in fingerprints:
            Question.objects.filter(pk=question.pk).update(bank_digest=fingerprint)
        # The changed questions' meaning, encoded together before each is saved.
        semantic.prime(
            [
                semantic.embedding_text(
                    r["question"]["title"],
                    r["question"]["concepts"],
                    r["question"]["prompt"],
                    r["answer"],
                )
                for r, _ in changed
            ]
        )
        for wanted, question in changed:
            _save_record(wanted, question, topics, applications)
            (report.updated if question else report.created).append(wanted["slug"])
        _record_files_digests({r["slug"]: r["path"] for r in bank.records})
        # Unchanged questions saved while the encoder was missing (or by an older recipe).
        semantic.fill(Question.objects.filter(slug__in=[r["slug"] for r in bank.records]))
    return report


def _record_files_digests(folders: dict[str, Path]) -> None:
    stored = dict(
        Question.objects.filter(slug__in=list(folders)).values_list("slug", "bank_files_digest")
    )
    for slug, folder in folders.items():
        found = files.files_digest(folder, files.taxonomy_path(folder))
        if slug in stored and stored[slug] != found:
            Question.objects.filter(slug=slug).update(bank_files_digest=found)


def _load_unchanged(paths: list[Path]) -> LoadReport | None:
    """The report of a load that has nothing to read: every question folder under `paths` (and
    its taxonomy) hashes as at its last load. None when anything differs (a file changed, a
    folder is new, a path is missing): the caller reads and validates the whole bank."""
    folders: dict[str, Path] = {}
    for root in paths:
        if not root.exists():
            return None
        for folder in files.question_folders(root):
            if folder.name in folders:
                return None  # a duplicate slug: the full load reports it
            folders[folder.name] = folder
    stored = dict(
        Question.objects.filter(slug__in=list(folders)).values_list("slug", "bank_files_digest")
    )
    if not folders or len(stored) != len(folders):
        return None
    for slug, folder in folders.items():
        if not stored[slug] or stored[slug] != files.files_digest(
            folder, files.taxonomy_path(folder)
        ):
            return None
    report = LoadReport()
    topic_order = dict(Topic.objects.values_list("slug", "order"))
    stale = []
    for question in _questions_for_sync().filter(slug__in=list(folders)).order_by("slug"):
        current = digest(canonical(record_from_question(question), topic_order))
        edited = bool(question.bank_digest) and current != question.bank_digest
        (report.kept if edited else report.unchanged).append(question.slug)
        if question.symptom_embeddings is None or question.embedding_key != semantic.embedding_key(
            semantic.embedding_text(
                question.title, question.concepts, question.prompt, question.answer
            )
        ):
            stale.append(question.pk)
    if stale:  # saved while the encoder was missing, or by an older recipe
        semantic.fill(Question.objects.filter(pk__in=stale))
    return report


def _upsert_taxonomy(taxonomy: dict[str, list[dict[str, Any]]]) -> None:
    for order, entry in enumerate(taxonomy["topics"]):
        Topic.objects.update_or_create(
            slug=entry["slug"],
            defaults={
                "name": entry["name"],
                "description": entry.get("description", ""),
                "order": order,
            },
        )
    for entry in taxonomy["applications"]:
        Application.objects.update_or_create(slug=entry["slug"], defaults={"name": entry["name"]})


def _save_record(
    record: dict[str, Any],
    question: Question | None,
    topics: dict[str, Topic],
    applications: dict[str, Application],
) -> None:
    meta = record["question"]
    question = question or Question(slug=record["slug"])
    question.title = meta["title"]
    question.difficulty = meta["difficulty"]
    question.kind = meta["kind"]
    question.status = meta["status"]
    question.primary_topic = topics[meta["topics"][0]]
    question.concepts = meta["concepts"]
    question.prompt = meta["prompt"]
    question.why_asked = meta["why_asked"]
    question.asked_as = list(meta.get("asked_as") or [])
    question.answer = record["answer"]
    question.bank_digest = digest(record)
    if question.status == Question.Status.PUBLISHED and question.published_at is None:
        question.published_at = timezone.now()
    question.full_clean(exclude=["search_vector", "answer_vector"])
    question.save()
    question.topics.set([topics[s] for s in meta["topics"]])
    question.applications.set([applications[s] for s in meta["applications"]])

    question.hints.all().delete()
    Hint.objects.bulk_create(
        Hint(question=question, order=i, text=text) for i, text in enumerate(meta["hints"], 1)
    )
    question.quick_checks.all().delete()
    QuickCheck.objects.bulk_create(
        QuickCheck(
            question=question,
            order=i,
            kind=c["kind"],
            prompt=c["question"],
            choices=c.get("choices", []),
            answer=c["answer"],
            explanation=c["explanation"],
        )
        for i, c in enumerate(meta.get("quick_checks", []), 1)
    )
    exercise = record["exercise"]
    if exercise is None:
        Exercise.objects.filter(question=question).delete()
        return
    em = exercise["meta"]
    saved, _ = Exercise.objects.update_or_create(
        question=question,
        defaults={
            "queue": em["queue"],
            "time_limit": float(em.get("time_limit", schema.DEFAULT_TIME_LIMIT)),
            "memory_limit_mb": int(em.get("memory_limit_mb", schema.DEFAULT_MEMORY_LIMIT_MB)),
            "forbid": em.get("forbid", []),
            "mutant_waivers": em.get("mutant_waivers") or {},
            "checks": em["checks"],
            "starter_code": exercise["starter_code"],
            "solution_code": exercise["solution_code"],
            "wrong_solutions": exercise["wrong_solutions"],
        },
    )
    # Verified by CI's verify_bank (the bank's files are), so live for learners at once.
    saved.version_create(verified=True)


# --- export -----------------------------------------------------------------------------------


def bank_export(*, path: Path) -> int:
    """Write the taxonomy and every question to `path` in the bank's file format.

    Each question folder is written beside its old version and swapped in, so an interrupted export
    leaves either the old or the new folder, never a mix. Returns the number of questions."""
    path.mkdir(parents=True, exist_ok=True)
    topics = list(Topic.objects.all())
    topic_order = {t.slug: t.order for t in topics}
    files.write_taxonomy(
        path,
        {
            "topics": [
                {"slug": t.slug, "name": t.name, "description": t.description} for t in topics
            ],
            "applications": [{"slug": a.slug, "name": a.name} for a in Application.objects.all()],
        },
    )
    count = 0
    for question in _questions_for_sync().order_by("slug"):
        record = canonical(record_from_question(question), topic_order)
        with tempfile.TemporaryDirectory(dir=path, prefix=".export-") as tmp:
            staged = files.write_question(Path(tmp), record)
            target = path / record["slug"]
            old = Path(tmp) / ".old"
            if target.exists():
                target.rename(old)
            staged.rename(target)
            if old.exists():
                shutil.rmtree(old)
        count += 1
    return count
