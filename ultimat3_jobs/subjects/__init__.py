"""Subject requests: ``register_subject_table(model, field, erase=...)`` declares where a data
subject's rows live; ``subject_export(subject_id)`` and ``subject_erase(subject_id)`` run a
durable job over exactly those tables, one step per page, and leave an audit row.

The names load on first use, so importing this package (as ``models.py`` does, for the table)
touches neither settings nor the job registry; any of them declares the two request jobs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ultimat3_jobs.subjects.requests import (
        SubjectTable,
        register_subject_table,
        registered_subject_tables,
        subject_digest,
        subject_erase,
        subject_export,
    )

__all__ = [
    "SubjectTable",
    "register_subject_table",
    "registered_subject_tables",
    "subject_digest",
    "subject_erase",
    "subject_export",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("ultimat3_jobs.subjects.requests"), name)
    raise AttributeError(f"module 'ultimat3_jobs.subjects' has no attribute {name!r}")
