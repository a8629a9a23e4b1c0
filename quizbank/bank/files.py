"""Reading and writing the bank's folder format (documented in fixtures/bank/README.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import schema

TAXONOMY_FILE = "taxonomy.yaml"


@dataclass
class Bank:
    taxonomy: dict[str, list[dict[str, Any]]] | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    taxonomy_files: set[Path] = field(default_factory=set)

    def error(self, path: Path | str, field_name: str, reason: str) -> None:
        self.errors.append(f"{path}: {field_name}: {reason}")


# libyaml's parser where PyYAML was built with it (about ten times faster on the bank); the same
# safe constructor either way.
_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):
    """SafeLoader that refuses duplicate keys, which plain YAML silently collapses."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str) -> Any:
    """YAML text as the bank's files are read (safe, duplicate keys refused)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass


def _load_yaml(path: Path, bank: Bank) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}" if mark else "(document)"
        reason = getattr(exc, "problem", None) or str(exc)
        bank.error(path, where, f"invalid YAML: {reason}")
    except UnicodeDecodeError:
        bank.error(path, "(document)", "is not UTF-8 text")
    return None


def _read_text(path: Path, bank: Bank) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        bank.error(path, "(document)", "is not UTF-8 text")
        return None


def _taxonomy_errors(data: Any) -> list[tuple[str, str]]:
    if not isinstance(data, dict) or set(data) - {"topics", "applications"}:
        return [("(document)", "must be a mapping with topics and applications")]
    errors = []
    for kind in ("topics", "applications"):
        entries = data.get(kind) or []
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("slug"), str):
                errors.append((f"{kind}[{i}]", "needs a slug"))
                continue
            if not schema.SLUG_RE.match(entry["slug"]):
                errors.append((f"{kind}[{i}].slug", f"{entry['slug']!r} is not a slug"))
            if entry["slug"] in seen:
                errors.append((f"{kind}[{i}].slug", f"duplicate slug {entry['slug']!r}"))
            seen.add(entry["slug"])
            if not isinstance(entry.get("name"), str) or not entry["name"].strip():
                errors.append((f"{kind}[{i}].name", "is required"))
            allowed = {"slug", "name", "description"} if kind == "topics" else {"slug", "name"}
            for key in set(entry) - allowed:
                errors.append((f"{kind}[{i}].{key}", "unknown key"))
    return errors


def read_bank(paths: list[Path]) -> Bank:
    """Read every question folder (any folder holding question.yaml) under the given paths."""
    bank = Bank()
    seen: dict[str, Path] = {}
    for root in paths:
        if not root.exists():
            bank.error(root, "(path)", "does not exist")
            continue
        # A question folder given alone brings its bank's taxonomy, so it can be loaded by itself.
        taxonomy = taxonomy_path(root)
        if taxonomy.exists() and taxonomy.resolve() not in bank.taxonomy_files:
            bank.taxonomy_files.add(taxonomy.resolve())
            data = _load_yaml(taxonomy, bank)
            if data is not None:
                errors = _taxonomy_errors(data)
                for field_name, reason in errors:
                    bank.error(taxonomy, field_name, reason)
                if not errors:
                    bank.taxonomy = bank.taxonomy or {"topics": [], "applications": []}
                    for kind in ("topics", "applications"):
                        bank.taxonomy[kind] += data.get(kind) or []
        for folder in question_folders(root):
            slug = folder.name
            if slug in seen:
                bank.error(
                    folder / "question.yaml", "slug", f"duplicate slug {slug!r} (also {seen[slug]})"
                )
                continue
            seen[slug] = folder
            record = read_question(folder, bank)
            if record is not None:
                bank.records.append(record)
    return bank


def question_folders(root: Path) -> list[Path]:
    """The question folders under `root` (any folder holding question.yaml), or `root` itself."""
    folders = [root] if (root / "question.yaml").exists() else []
    return folders + sorted(p.parent for p in root.rglob("*/question.yaml"))


def taxonomy_path(root: Path) -> Path:
    """The taxonomy a bank folder (or a question folder given alone) is read with."""
    path = root / TAXONOMY_FILE
    if not path.exists() and (root / "question.yaml").exists():
        path = root.parent / TAXONOMY_FILE
    return path


def files_digest(folder: Path, taxonomy: Path) -> str:
    """The hash of every file read for a question folder, and of its taxonomy: equal hashes mean
    the folder reads exactly as it did (load_bank then skips reading it)."""
    digest = hashlib.sha256()
    paths = [taxonomy] if taxonomy.exists() else []
    paths += [folder / name for name in QUESTION_FILES if (folder / name).exists()]
    paths += sorted((folder / "wrong").glob("*.py"))
    for path in paths:
        digest.update(str(path.relative_to(folder.parent)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


QUESTION_FILES = ("question.yaml", "answer.md", "exercise.yaml", "starter.py", "solution.py")


def read_question(folder: Path, bank: Bank) -> dict[str, Any] | None:
    question = _load_yaml(folder / "question.yaml", bank)
    if question is None:
        return None
    answer_path = folder / "answer.md"
    answer = _read_text(answer_path, bank) if answer_path.exists() else None
    record: dict[str, Any] = {
        "slug": folder.name,
        "path": folder,
        "question": question,
        "answer": answer,
        "exercise": None,
    }
    exercise_path = folder / "exercise.yaml"
    if exercise_path.exists():
        meta = _load_yaml(exercise_path, bank)
        if meta is None:
            return None
        code = {}
        for key, filename in (("starter_code", "starter.py"), ("solution_code", "solution.py")):
            path = folder / filename
            code[key] = _read_text(path, bank) if path.exists() else None
        wrong = {}
        for path in sorted((folder / "wrong").glob("*.py")):
            text = _read_text(path, bank)
            if text is not None:
                wrong[path.stem] = text
        record["exercise"] = {"meta": meta, **code, "wrong_solutions": wrong}
    return record


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write_question(root: Path, record: dict[str, Any]) -> Path:
    folder = root / record["slug"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "question.yaml").write_text(dump_yaml(record["question"]), encoding="utf-8")
    (folder / "answer.md").write_text(record["answer"], encoding="utf-8")
    exercise = record.get("exercise")
    if exercise:
        (folder / "exercise.yaml").write_text(dump_yaml(exercise["meta"]), encoding="utf-8")
        (folder / "starter.py").write_text(exercise["starter_code"], encoding="utf-8")
        (folder / "solution.py").write_text(exercise["solution_code"], encoding="utf-8")
        if exercise["wrong_solutions"]:
            (folder / "wrong").mkdir(exist_ok=True)
        for name, code in exercise["wrong_solutions"].items():
            (folder / "wrong" / f"{name}.py").write_text(code, encoding="utf-8")
    return folder


def write_taxonomy(root: Path, taxonomy: dict[str, list[dict[str, Any]]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / TAXONOMY_FILE).write_text(dump_yaml(taxonomy), encoding="utf-8")
