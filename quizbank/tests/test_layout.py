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


def import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports (at the top or inside a function alike)."""
    modules: dict[str, Path] = {}
    for package in ("accounts", "quizbank", "practice", "grader"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts or "tests" in parts:
                continue
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                # `from package import module` imports that module; other names, the package.
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = subs or [base]
            for target in targets:
                found = known(target)
                if found and found != name:
                    graph[name].add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# The loop Celery imposes: a task calls a service, and the service enqueues the task (lazily,
# through services/dispatch.py, the only importer of tasks).
CELERY_LOOP = "practice.tasks"
# Known and left: the bank's schema reads the models' enums, and a quick check's clean() reads
# the schema's rules for its shape.
KNOWN = [{"quizbank.bank.schema", "quizbank.models"}]


def test_no_import_circle_but_celerys_task_service_loop():
    graph = import_graph()
    assert {m for m, targets in graph.items() if CELERY_LOOP in targets} == {
        "practice.services.dispatch"
    }
    without_tasks = {m: t - {CELERY_LOOP} for m, t in graph.items() if m != CELERY_LOOP}
    assert circles(without_tasks) == KNOWN


def test_the_circle_check_sees_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_the_graders_tests_run_alone_without_django():
    # grader/pytest.ini: `pytest grader` neither loads pytest-django nor the root conftest (DRF).
    import subprocess
    import sys

    probe = (
        "import sys, pytest\n"
        "args = ['grader', '-q', '-p', 'no:cacheprovider', '-k', 'missing_interpreter']\n"
        "rc = pytest.main(args)\n"
        "banned = ('django', 'rest_framework')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in banned)\n"
        "print('RESULT', rc, loaded)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert "RESULT 0 []" in run.stdout, run.stdout + run.stderr


# What any module may import from the grader: pure validation and limits, no running of code.
GRADER_FOR_ANYONE = ("grader.limits", "grader.jobs")


def grader_imports(package: str):
    """(file, grader module) for every import of the grader; `from grader import limits` is
    grader.limits, `from grader import SandboxPool` the package itself."""
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if "migrations" in parts or "tests" in parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "grader":
                names = [
                    f"grader.{a.name}" if (ROOT / "grader" / f"{a.name}.py").exists() else "grader"
                    for a in node.names
                ]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            yield from ((path, n) for n in names if n.split(".")[0] == "grader")


# verify_bank also reads the mutation scores' bookkeeping (baseline file, ratchet) and the rng
# probe's (its id and known-failures list): no code runs.
PURE_FOR = {"verify_bank.py": ("grader.mutation", "grader.probes")}


def test_the_learner_app_runs_code_only_through_its_grader_client():
    offending = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path, module in grader_imports("practice")
        if module not in GRADER_FOR_ANYONE
        and module not in PURE_FOR.get(path.name, ())
        and path.name != "grader_client.py"
    ]
    assert offending == []


def test_the_content_app_reads_only_the_graders_validation():
    offending = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path, module in grader_imports("quizbank")
        if module not in GRADER_FOR_ANYONE
    ]
    assert offending == []


def test_the_grader_check_sees_the_client_import():
    modules = {m for p, m in grader_imports("practice") if p.name == "grader_client.py"}
    assert {"grader", "grader.verification", "grader.limits"} <= modules


def service_error_catches(package: str):
    """(file, line) of every `except` in the package's API modules that catches a service's
    error: Django's ValidationError or one of quizbank.errors' (the exception handler's job)."""
    errors = {"ValidationError", "DjangoValidationError", "LimitReached", "Conflict", "Unavailable"}
    errors |= {"SubmissionBudgetExceeded", "InterviewLimitReached", "UndoRefused"}
    errors |= {"GradingUnavailable"}
    for path in sorted((ROOT / package / "api").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {
                    n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "")
                    for n in ast.walk(node.type)
                }
                if names & errors:
                    yield f"{path.relative_to(ROOT)}:{node.lineno}"


@pytest.mark.parametrize("package", ["practice", "quizbank", "accounts"])
def test_viewsets_leave_service_errors_to_the_one_exception_handler(package):
    assert list(service_error_catches(package)) == []
