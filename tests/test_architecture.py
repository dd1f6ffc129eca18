"""Imports run one way: surface → processes → job model → seam → core. Checked with ast over
every module of the package, lazy (function-level) imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ultimat3_jobs"

CORE = ["types", "errors", "conf", "serialization"]
SEAM = ["drivers", "drivers.base"]
JOB_MODEL = [
    "definitions",
    "registry",
    "context",
    "client",
    "schedule",
    "transactions",
    "tracing",
]
DRIVERS = [
    "drivers.memory",
    "drivers.postgres",
    "drivers.postgres.driver",
    "drivers.postgres.queries",
]
SURFACE = ["__init__", "apps", "checks"]


def layer_of(module: str) -> str:
    if module in CORE:
        return "core"
    if module in SEAM:
        return "seam"
    if module in JOB_MODEL:
        return "job model"
    if module.startswith(("worker", "scheduler", "outbox", "operator")):
        return "processes"
    if module in DRIVERS or module.startswith("drivers."):
        return "driver"
    if module == "models" or module.startswith("migrations"):
        return "schema"
    return "surface"


# What each layer may import from the package (besides itself, per the rules below).
ALLOWED = {
    "core": {"core"},
    "seam": {"core", "seam"},
    "job model": {"core", "seam", "job model"},
    "processes": {"core", "seam", "job model", "processes"},
    "driver": {"core", "seam", "driver", "schema"},
    "schema": {"core"},
    "surface": {"core", "seam", "job model", "processes", "driver", "schema", "surface"},
}
# Django modules a layer must not touch (the database stays below the seam).
FORBIDDEN_DJANGO = {
    "core": ("django.db", "django.apps", "django.contrib"),
    "seam": ("django.db",),
    "job model": ("django.db.connection", "django.db.connections", "django.db.models"),
    "processes": ("django.db.connection", "django.db.connections", "django.db.models"),
}
# Named exceptions, each with its reason.
EXCEPTIONS = {
    # The models' raw-SQL managers read the statement texts; queries.py imports nothing of ours.
    ("models", "drivers.postgres.queries"),
}
# Django imports a module may make despite its layer's rule, each with its reason.
DJANGO_EXCEPTIONS = {
    # A pool thread that ends closes the connections its job bodies opened, as Django does at
    # the end of a request (close_all touches only the calling thread's connections).
    ("worker.pool", "django.db.connections"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    package = module_name(path).rsplit(".", 1)[0] if "." in module_name(path) else ""
    if path.name == "__init__.py":
        package = module_name(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, node.module] if node.module else base)
                found.append(f"ultimat3_jobs.{target}" if target else "ultimat3_jobs")
            elif node.module:
                found.append(node.module)
                found.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def own_module(imported: str) -> str | None:
    if imported == "ultimat3_jobs" or not imported.startswith("ultimat3_jobs."):
        return "__init__" if imported == "ultimat3_jobs" else None
    name = imported.removeprefix("ultimat3_jobs.")
    candidates = [name, name.rsplit(".", 1)[0]]
    for candidate in candidates:
        path = PACKAGE.joinpath(*candidate.split("."))
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return candidate
    return None


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_module_imports_follow_the_layer_table(path: Path) -> None:
    me = module_name(path)
    my_layer = layer_of(me)
    problems = []
    for imported in imports_of(path):
        for prefix in FORBIDDEN_DJANGO.get(my_layer, ()):
            if (me, imported) in DJANGO_EXCEPTIONS:
                continue
            if imported == prefix or imported.startswith(prefix + "."):
                problems.append(f"{me} ({my_layer}) imports {imported}")
        target = own_module(imported)
        if target is None or target == me or (me, target) in EXCEPTIONS:
            continue
        target_layer = layer_of(target)
        if target_layer == "surface" and my_layer != "surface":
            problems.append(f"{me} ({my_layer}) imports the surface module {target}")
        elif target_layer not in ALLOWED[my_layer]:
            problems.append(f"{me} ({my_layer}) imports {target} ({target_layer})")
    assert problems == []


def test_core_modules_import_only_earlier_core_modules() -> None:
    for index, name in enumerate(CORE):
        for imported in imports_of(PACKAGE / f"{name}.py"):
            target = own_module(imported)
            if target in CORE:
                assert CORE.index(target) < index, f"{name} imports {target}"


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    # The table would catch a job-model module that reached for a concrete driver.
    assert layer_of("drivers.postgres.driver") not in ALLOWED[layer_of("client")]
    assert layer_of("models") not in ALLOWED[layer_of("definitions")]
    assert layer_of("apps") == "surface"
    assert own_module("ultimat3_jobs.drivers.postgres.driver.PostgresDriver") == (
        "drivers.postgres.driver"
    )


def test_every_module_has_a_layer() -> None:
    assert {layer_of(module_name(p)) for p in MODULES} <= set(ALLOWED)
    assert len(MODULES) >= len(CORE) + len(JOB_MODEL)


# -- database errors stay below the seam ------------------------------------------------------

RUNTIME_AND_OPERATOR = ("runtime", "worker", "scheduler", "outbox", "operator")
"""The layers that speak to the store only through the seam (``runtime`` once the worker, the
scheduler and the relay live there)."""
DATABASE_ERROR_NAMES = {
    "Error",
    "DatabaseError",
    "OperationalError",
    "InterfaceError",
    "DataError",
    "IntegrityError",
    "ProgrammingError",
    "InternalError",
    "NotSupportedError",
}


def database_errors_named(path: Path) -> list[str]:
    """The ``django.db`` and ``psycopg`` exception classes a module imports or names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] == "psycopg":
                found.extend(f"{node.module}.{alias.name}" for alias in node.names)
            elif node.module in ("django.db", "django.db.utils"):
                found.extend(
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name in DATABASE_ERROR_NAMES
                )
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.split(".")[0] == "psycopg")
        elif isinstance(node, ast.Attribute) and node.attr in DATABASE_ERROR_NAMES:
            dotted = ast.unparse(node)
            if dotted.startswith(("django.db.", "psycopg.", "db.", "utils.")):
                found.append(dotted)
    return found


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if module_name(p).split(".")[0] in RUNTIME_AND_OPERATOR],
    ids=lambda p: module_name(p),
)
def test_runtime_and_operator_never_name_a_database_error(path: Path) -> None:
    """Each driver raises the seam's errors (``DriverUnavailable``, ``StoreRefused``): code
    above the seam that caught a database's own would treat a refused row as a lost
    connection, or miss another driver's."""
    assert database_errors_named(path) == []


def test_the_checker_sees_a_database_error(tmp_path: Path) -> None:
    module = tmp_path / "loop.py"
    module.write_text(
        "from django.db import OperationalError, connections\n"
        "from django.db.utils import DataError\n"
        "import psycopg.errors\n"
        "from psycopg import errors\n"
        "import django.db\n"
        "caught = (django.db.IntegrityError, django.db.models)\n"
    )
    assert database_errors_named(module) == [
        "django.db.OperationalError",
        "django.db.utils.DataError",
        "psycopg.errors",
        "psycopg.errors",
        "django.db.IntegrityError",
    ]
