"""Where a data subject's rows live: each registered table is a model, the field that holds the
subject's id, and how its rows are erased (``delete``, ``anonymize`` or a callable).

A request reaches data only through these tables: a table is refused at registration when its
field is unknown or its erase mode is unusable, and at planning time when deleting its rows
would cascade into a table that is not registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import models

from ultimat3_jobs.errors import SubjectFieldUnknown, SubjectTableInvalid
from ultimat3_jobs.factories.declared import Declared
from ultimat3_jobs.values import whole_number

EraseRule = Literal["delete", "anonymize"] | Callable[[models.QuerySet[Any]], Any]
PAGE_SIZE_MAX = 10_000
# What deleting a row does to the rows that point at it, beyond its own table.
_LEAVES_OTHERS_ALONE = (models.PROTECT, models.RESTRICT, models.DO_NOTHING)


@dataclass(frozen=True, slots=True)
class SubjectTable:
    """One registered table: ``label`` (``app_label.Model``) names it in plans and audits."""

    model: type[models.Model]
    field: str
    erase: EraseRule
    anonymize: Mapping[str, Any] = field(default_factory=dict)
    page_size: int = 500

    @property
    def label(self) -> str:
        return str(self.model._meta.label)

    def rows(self, subject_id: Any) -> models.QuerySet[Any]:
        """The subject's rows of this table."""
        return self.model._default_manager.filter(**{self.field: subject_id})


_tables: Declared[SubjectTable] = Declared("subject table", SubjectTableInvalid)


def register_subject_table(
    model: type[models.Model],
    field: str,
    *,
    erase: EraseRule = "delete",
    anonymize: Mapping[str, Any] | None = None,
    page_size: int = 500,
) -> SubjectTable:
    """Register ``model`` as holding a subject's rows, found by ``field`` (the subject's id, or a
    foreign key to it). ``erase``: ``"delete"`` removes the rows; ``"anonymize"`` sets
    ``field`` to NULL and each of ``anonymize``'s fields to its value; a callable is given a
    queryset of one page of the subject's rows and must leave none of them the subject's.
    Registering a model again replaces its entry."""
    if not isinstance(model, type) or not issubclass(model, models.Model):
        raise SubjectTableInvalid(f"a subject table is a Django model; got {model!r:.80}")
    label = model._meta.label
    concrete = {f.name: f for f in model._meta.concrete_fields}
    if not isinstance(field, str) or field not in concrete:
        known = ", ".join(sorted(concrete))
        raise SubjectFieldUnknown(
            f"subject table {label}: {field!r:.80} is not a field of {label} (its fields: {known})",
            field="field",
        )
    values = dict(anonymize or {})
    if erase == "anonymize":
        if not concrete[field].null:
            raise SubjectTableInvalid(
                f"subject table {label}: erase='anonymize' sets {field} to NULL, but {field} is "
                "not nullable (make it null=True, or erase with 'delete' or a callable)",
                field="erase",
            )
        for name in values:
            if name not in concrete or concrete[name].primary_key:
                raise SubjectFieldUnknown(
                    f"subject table {label}: anonymize names {name!r:.80}, not a field of {label} "
                    "it may overwrite",
                    field="anonymize",
                )
    elif values:
        raise SubjectTableInvalid(
            f"subject table {label}: anonymize= goes with erase='anonymize' only", field="erase"
        )
    elif erase != "delete" and not callable(erase):
        raise SubjectTableInvalid(
            f"subject table {label}: erase must be 'delete', 'anonymize' or a callable; got "
            f"{erase!r:.80}",
            field="erase",
        )
    if not whole_number(page_size, 1, PAGE_SIZE_MAX):
        raise SubjectTableInvalid(
            f"subject table {label}: page_size must be an integer from 1 to {PAGE_SIZE_MAX}; "
            f"got {page_size!r:.40}",
            field="page_size",
        )
    table = SubjectTable(model, field, erase, values, page_size)
    _tables.add(label, table)
    return table


def unregister_subject_table(model: type[models.Model]) -> None:
    """Forget ``model``'s entry (for tests)."""
    _tables.remove(model._meta.label)


def registered_subject_tables() -> list[SubjectTable]:
    """Every registered table, by label."""
    return _tables.all()


def table_named(label: str) -> SubjectTable | None:
    return _tables.find(label)


def check_reach(tables: list[SubjectTable]) -> None:
    """Refuse a plan whose ``delete`` tables would cascade (or set NULL) into a table that is not
    registered: erasing reaches data only through registered tables."""
    registered = {table.model for table in tables}
    for table in tables:
        if table.erase != "delete":
            continue
        for relation in table.model._meta.related_objects:
            on_delete = getattr(relation, "on_delete", None)
            if on_delete in _LEAVES_OTHERS_ALONE or relation.related_model in registered:
                continue
            other = relation.related_model._meta.label
            raise SubjectTableInvalid(
                f"subject table {table.label}: deleting its rows would change rows of {other} "
                f"(through {other}.{relation.field.name}), which is not a registered subject "
                "table; register it too, or erase with 'anonymize' or a callable",
                field="erase",
            )
