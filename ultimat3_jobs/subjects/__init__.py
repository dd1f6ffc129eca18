"""Subject requests: ``register_subject_table(model, field, erase=...)`` declares where a data
subject's rows live; ``subject_export(subject_id)`` and ``subject_erase(subject_id)`` run a
durable job over exactly those tables, one step per page, and leave an audit row.

The names load on first use, so importing this package (as ``models.py`` does, for the table)
touches neither settings nor the job registry; any of them declares the two request jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.lazy import lazy_exports

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

__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, ".requests"))
