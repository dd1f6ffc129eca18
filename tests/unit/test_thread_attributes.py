"""A ``threading.Thread`` subclass must not hide the thread's own attributes.

Python 3.12's ``Thread.join()`` calls the private ``self._stop()``; a subclass that stored an
``Event`` as ``self._stop`` made every shutdown raise ``TypeError: 'Event' object is not
callable`` there (issue: burst and SIGTERM'd workers exited 1 on 3.12). The rule is checked over
every module of the package with ``ast``, so it holds on any Python the suite runs on.
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ultimat3_jobs"


def _thread_attributes() -> set[str]:
    names = set(dir(threading.Thread))
    names |= set(vars(threading.Thread(target=lambda: None)))
    # Private names of threading.Thread across 3.12 and 3.13 (some exist on only one of them).
    names |= {
        "_stop",
        "_started",
        "_target",
        "_args",
        "_kwargs",
        "_name",
        "_daemonic",
        "_ident",
        "_tstate_lock",
        "_is_stopped",
        "_handle",
        "_invoke_excepthook",
        "_stderr",
        "_initialized",
        "_native_id",
        "_wait_for_tstate_lock",
        "_bootstrap",
    }
    return names


def _thread_subclasses() -> list[tuple[Path, ast.ClassDef]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base) in {"threading.Thread", "Thread"} for base in node.bases
            ):
                found.append((path, node))
    return found


def _assigned_self_attributes(cls: ast.ClassDef) -> set[str]:
    names = set()
    for node in ast.walk(cls):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                names.add(target.attr)
    return names


def test_the_package_has_thread_subclasses_to_check() -> None:
    names = {cls.name for _, cls in _thread_subclasses()}
    assert {"Maintenance", "Settler"} <= names


def test_no_thread_subclass_hides_an_attribute_of_threading_thread() -> None:
    reserved = _thread_attributes()
    clashes = [
        f"{path.relative_to(PACKAGE.parent)}: {cls.name}.{name}"
        for path, cls in _thread_subclasses()
        for name in sorted(_assigned_self_attributes(cls) & reserved)
    ]
    assert clashes == [], f"these assignments hide threading.Thread's own attributes: {clashes}"
