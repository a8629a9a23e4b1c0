"""The layout's rules, checked on the source: arrows run one way (accounts <- quizbank <- practice,
practice -> grader), and the grader imports no Django."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(package: str, *, skip_tests: bool = True):
    """(file, module) for every import in the package's source."""
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if "migrations" in parts or (skip_tests and "tests" in parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield path, node.module


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("quizbank", ("practice",)),
        ("accounts", ("practice", "quizbank")),
        ("grader", ("django", "rest_framework", "celery", "quizbank", "practice", "accounts")),
    ],
)
def test_imports_run_one_way(package, forbidden):
    offending = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path, module in imported_modules(package, skip_tests=package != "grader")
        if module.split(".")[0] in forbidden
    ]
    assert offending == []


def test_the_check_sees_imports(tmp_path):
    # The walker must find both import forms, or the rule above would pass vacuously.
    modules = {m for _, m in imported_modules("practice")}
    assert {"quizbank.models", "django.db"} <= modules
