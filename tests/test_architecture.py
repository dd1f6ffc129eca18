"""Imports run one way: surface → operator / runtime → job model → seam → core, with the concrete
drivers beside the seam. Checked with ast over every module of the package, TYPE_CHECKING imports
included; no module imports inside a function (the one exception is named below)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ultimat3_jobs"

CORE = [
    "frozen",
    "carry",
    "lazy",
    "values",
    "records",
    "types",
    "batches",
    "errors_base",
    "errors_features",
    "errors",
    "serialization",
    "conf_rules",
    "conf",
]
SEAM = [
    "drivers",
    "drivers.base",
    "drivers.common",
    "drivers.operating",
    "drivers.job_driver",
    "drivers.outbox_store",
    "drivers.steps_seam",
    "drivers.leases_seam",
    "drivers.retention_seam",
    "drivers.backfill_seam",
]
# Shims at paths users may have written; they warn and re-export, and nothing of ours imports them.
SHIMS = ["tasks", "context", "worker"]
SURFACE_PACKAGES = ("admin", "management", "contrib", "testing")
SURFACE = ["__init__", "apps", "checks", "urls", "views", "tenancy", *SHIMS]
# Features built on the public job API (a job, a view), with tables of their own that they read
# and write through the ORM, as the admin does: never the hot path of the job store.
FEATURE_PACKAGES = ("webhooks", "consumers", "subjects")
# A feature's tables: models.py imports them so that Django (and its migrations) sees them.
FEATURE_TABLES = [
    "webhooks.tables",
    "consumers.tables",
    "subjects.tables",
    "lease_tables",
    "step_tables",
]
SURFACE = ["__init__", "apps", "checks", "urls", "views", "jobs", "tenancy", *SHIMS]


def layer_of(module: str) -> str:
    if module in CORE:
        return "core"
    if module in SEAM:
        return "seam"
    if module == "model" or module.startswith("model."):
        return "model"
    if module.startswith("drivers."):
        return "driver"
    if module == "runtime" or module.startswith("runtime."):
        return "runtime"
    if module == "operator" or module.startswith("operator."):
        return "operator"
    if module == "factories" or module.startswith("factories."):
        return "factories"
    if (
        module in ("models", "models_ledger")
        or module.startswith("migrations")
        or module in FEATURE_TABLES
    ):
        return "schema"
    if module in SURFACE or module.split(".")[0] in SURFACE_PACKAGES:
        return "surface"
    if module.split(".")[0] in FEATURE_PACKAGES:
        return "feature"
    return "unplaced"


# What each layer may import from the package (besides itself, per the rules below).
ALLOWED = {
    "core": {"core"},
    "seam": {"core", "seam"},
    "model": {"core", "seam", "model"},
    "runtime": {"core", "seam", "model", "runtime"},
    "operator": {"core", "seam", "model", "operator"},
    "factories": {"core", "seam", "model", "factories"},
    "driver": {"core", "seam", "driver", "schema"},
    "schema": {"core", "schema"},
    # A feature may give the purge a target for its own table (webhooks/retention.py).
    "feature": {"core", "seam", "model", "operator", "factories", "schema", "feature"},
    "surface": {
        "core",
        "seam",
        "model",
        "runtime",
        "operator",
        "driver",
        "schema",
        "feature",
        "factories",
        "surface",
    },
}
# Django modules a layer must not touch (the database stays below the seam).
FORBIDDEN_DJANGO = {
    "core": ("django.db", "django.apps", "django.contrib"),
    "seam": ("django.db",),
    "model": ("django.db.connection", "django.db.connections", "django.db.models"),
    "runtime": ("django.db.connection", "django.db.connections", "django.db.models"),
    "operator": ("django.db.connection", "django.db.connections", "django.db.models"),
    "factories": ("django.db.connection", "django.db.connections", "django.db.models"),
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
    ("runtime.common.pool", "django.db.connections"),
    # A rollup or a view refresh runs the project's own statement on the project's own alias:
    # not a job-store table, so not a driver's statement.
    ("factories.rollup", "django.db.connections"),
    # The range reader compiles the source's key read once, with an expression marking the
    # cursor's place: the project's own queryset on the project's own alias.
    ("factories.sources", "django.db.models"),
}
# Imports inside a function, each with its reason.
FUNCTION_IMPORTS = {
    # Django calls AppConfig.ready once every app's models are loaded: the system checks (which
    # read the concrete driver and the migration recorder) and the autodiscovery of each app's
    # jobs module can only be imported then.
    ("apps", "Ultimat3JobsConfig.ready"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, tree: ast.AST | None = None) -> list[str]:
    if tree is None:
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
    assert layer_of("drivers.postgres.driver") not in ALLOWED[layer_of("model.enqueue")]
    assert layer_of("models") not in ALLOWED[layer_of("model.definitions")]
    assert layer_of("runtime.worker.loop") not in ALLOWED[layer_of("model.policy")]
    assert layer_of("apps") == "surface"
    assert own_module("ultimat3_jobs.drivers.postgres.driver.PostgresDriver") == (
        "drivers.postgres.driver"
    )


def test_every_module_has_a_layer() -> None:
    unplaced = [module_name(p) for p in MODULES if layer_of(module_name(p)) == "unplaced"]
    assert unplaced == []
    layers = {layer_of(module_name(p)) for p in MODULES}
    assert layers == set(ALLOWED), "every layer holds at least one module"


# -- the runtime -------------------------------------------------------------------------------

RUNTIME_PARTS = ("runtime.worker", "runtime.scheduler", "runtime.relay", "runtime.common")


def modules_under(prefix: str) -> list[Path]:
    return [
        p for p in MODULES if module_name(p) == prefix or module_name(p).startswith(prefix + ".")
    ]


@pytest.mark.parametrize("part", RUNTIME_PARTS)
def test_the_runtime_has_its_parts(part: str) -> None:
    assert modules_under(part), f"no module under ultimat3_jobs.{part}"


@pytest.mark.parametrize("part", ["runtime.scheduler", "runtime.relay", "runtime.common"])
def test_the_scheduler_relay_and_common_never_import_the_worker(part: str) -> None:
    """The worker may be left out of a process that runs only a scheduler or a relay: what they
    share lives in runtime.common, and runtime.process wires the three together."""
    problems = [
        f"{module_name(path)} imports {imported}"
        for path in modules_under(part)
        for imported in imports_of(path)
        if (own_module(imported) or "").startswith("runtime.worker")
    ]
    assert modules_under(part)
    assert problems == []


def test_the_runtime_never_imports_a_concrete_driver() -> None:
    problems = [
        f"{module_name(path)} imports {imported}"
        for path in modules_under("runtime")
        for imported in imports_of(path)
        if layer_of(own_module(imported) or "") in ("driver", "schema")
    ]
    assert modules_under("runtime")
    assert problems == []


def test_nothing_of_ours_imports_a_shim() -> None:
    problems = [
        f"{module_name(path)} imports the shim {own_module(imported)}"
        for path in MODULES
        for imported in imports_of(path)
        if own_module(imported) in SHIMS and module_name(path) not in SHIMS
    ]
    assert problems == []


# -- no imports inside functions ---------------------------------------------------------------


def function_imports(source: str) -> list[tuple[str, str]]:
    """(dotted function name, imported module) for each import inside a function."""
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, scope: list[str], in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import):
                found.extend((".".join(scope), alias.name) for alias in child.names)
            elif in_function and isinstance(child, ast.ImportFrom):
                found.append((".".join(scope), "." * child.level + (child.module or "")))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, [*scope, child.name], True)
            elif isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name], in_function)
            else:
                visit(child, scope, in_function)

    visit(ast.parse(source), [], False)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_import_inside_a_function(path: Path) -> None:
    """An import inside a function hides a cycle or a layer breach from the table above."""
    me = module_name(path)
    found = [
        f"{me}.{function} imports {imported}"
        for function, imported in function_imports(path.read_text())
        if (me, function) not in FUNCTION_IMPORTS
    ]
    assert found == []


def test_the_checker_sees_an_import_inside_a_function() -> None:
    source = (
        "import os\n"
        "if os:\n    import sys\n"
        "def f():\n    from ultimat3_jobs import registry\n"
        "class C:\n    async def g(self):\n        def h():\n            import json\n"
    )
    assert function_imports(source) == [("f", "ultimat3_jobs"), ("C.g.h", "json")]


def test_every_named_function_import_exists() -> None:
    """A named exception that no longer matches anything is removed, not kept."""
    for module, function in FUNCTION_IMPORTS:
        path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
        assert function in {name for name, _ in function_imports(path.read_text())}


# -- no import cycle ---------------------------------------------------------------------------


def runtime_imports_of(path: Path) -> set[str]:
    """Our modules ``path`` imports when it runs: everything but ``if TYPE_CHECKING:`` blocks,
    function bodies included (a cycle hidden inside a function is still a cycle). ``from
    package import module`` is an edge to the module, not to the package."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            node.body = [ast.Pass()]
    targets: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(own_module(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            package = own_module(node.module)
            for alias in node.names:
                submodule = own_module(f"{node.module}.{alias.name}")
                if submodule == (
                    alias.name if package == "__init__" else f"{package}.{alias.name}"
                ):
                    targets.add(submodule)
                else:
                    targets.add(package)
    return {t for t in targets if t is not None and t != module_name(path)}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as a path that ends where it starts, or ``[]``."""
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str]:
        if node in trail:
            return [*trail[trail.index(node) :], node]
        if node in done:
            return []
        for target in sorted(graph.get(node, ())):
            cycle = visit(target, [*trail, node])
            if cycle:
                return cycle
        done.add(node)
        return []

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return []


def test_no_import_cycle() -> None:
    graph = {module_name(p): runtime_imports_of(p) for p in MODULES}
    assert find_cycle(graph) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


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


# -- module size -------------------------------------------------------------------------------

MAX_MODULE_LINES = 400
# The modules still over the limit, each with its reason; nothing new joins this list, and an
# entry goes once its module is split.
LONG_MODULES: dict[str, str] = {}


def lines_of(path: Path) -> int:
    return len(path.read_text().splitlines())


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_module_over_400_lines(path: Path) -> None:
    """A long module hides its parts: split it by what its parts do (as ``drivers/memory/`` is,
    one module per table family) rather than grow it."""
    me = module_name(path)
    if me in LONG_MODULES:
        return
    assert lines_of(path) <= MAX_MODULE_LINES, f"{me} has {lines_of(path)} lines"


def test_every_long_module_named_is_still_long() -> None:
    """An entry whose module shrank under the limit (or went) is removed, not kept."""
    paths = {module_name(p): p for p in MODULES}
    short = [
        name
        for name in LONG_MODULES
        if name not in paths or lines_of(paths[name]) <= MAX_MODULE_LINES
    ]
    assert short == []
