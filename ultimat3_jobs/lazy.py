"""Lazy exports: the names a package's ``__init__`` offers, imported only on first use, so
importing the package (as ``INSTALLED_APPS`` or pytest's plugin loading do, before Django is set
up) touches neither settings nor the database.

Layer L1 (core): the standard library only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``sources`` comes, on first use,
    from the module its value names (``".queries"`` within ``package``), under the same name or
    under the one after a colon (``"ultimat3_jobs.model.enqueue:enqueue_by_name"``)."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = sources[name].partition(":")
        return getattr(importlib.import_module(module, package), attribute or name)

    return __getattr__


def lazy_modules(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` whose names are modules: each name of
    ``sources`` is, on first use, the module its value names (a dotted path), imported then."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return importlib.import_module(sources[name])

    return __getattr__
