"""One page of one table: erase it, or export it to the storage; and the document that gathers a
table's exported pages. Each is the function of one durable step: it answers a small JSON
summary (a count, the last primary key, a storage name), never the rows.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.core.serializers.json import DjangoJSONEncoder
from django.db import router, transaction

from ultimat3_jobs.subjects.registry import SubjectTable
from ultimat3_jobs.subjects.tables import SubjectRequest


def _page_keys(table: SubjectTable, subject_id: Any, after: Any) -> list[Any]:
    rows = table.rows(subject_id)
    if after is not None:
        rows = rows.filter(pk__gt=after)
    return list(rows.order_by("pk").values_list("pk", flat=True)[: table.page_size])


def _json_key(key: Any) -> Any:
    return key if isinstance(key, (int, str)) and not isinstance(key, bool) else str(key)


def erase_page(
    table: SubjectTable, subject_id: Any, after: Any, request_id: int | None = None
) -> dict[str, Any]:
    """Erase the subject's next page of ``table`` (rows after primary key ``after``), in one
    transaction; answer how many rows and the page's last key.

    The count is added to request ``request_id``'s audit row in that same transaction (when the
    audit table shares the table's database): a crash after the page commits and before its
    step is stored re-runs the step on the NEXT rows, so a count kept only in the step would
    lose the committed page's rows."""
    using = router.db_for_write(table.model)
    with transaction.atomic(using=using):
        keys = _page_keys(table, subject_id, after)
        if keys:
            page = table.model._default_manager.using(using).filter(pk__in=keys)
            if table.erase == "delete":
                page.delete()
            elif table.erase == "anonymize":
                page.update(**{table.field: None, **table.anonymize})
            else:
                table.erase(page)  # type: ignore[operator]
            if request_id is not None and audit_database() == using:
                add_count(request_id, table.label, len(keys), using)
    if keys and request_id is not None and audit_database() != using:
        add_count(request_id, table.label, len(keys), audit_database())
    return {"count": len(keys), "last": _json_key(keys[-1]) if keys else after}


def audit_database() -> str:
    """The database of the audit table ``x_subject_requests``."""
    return router.db_for_write(SubjectRequest)


def add_count(request_id: int, label: str, count: int, using: str) -> None:
    """Add ``count`` rows to ``label``'s count on the audit row (locked while it is read)."""
    with transaction.atomic(using=using):
        row = SubjectRequest.objects.using(using).select_for_update().get(id=request_id)
        row.counts = {**row.counts, label: int(row.counts.get(label, 0)) + count}
        row.save(update_fields=["counts"])


def export_page(
    table: SubjectTable, subject_id: Any, after: Any, storage: str, prefix: str, page: int
) -> dict[str, Any]:
    """Write the subject's next page of ``table`` to ``storage`` as a part of its document;
    answer how many rows, the page's last key and the part's storage name."""
    keys = _page_keys(table, subject_id, after)
    if not keys:
        return {"count": 0, "last": after, "part": None}
    fields = [f.attname for f in table.model._meta.concrete_fields]
    rows = list(table.model._default_manager.filter(pk__in=keys).order_by("pk").values(*fields))
    body = json.dumps(rows, cls=DjangoJSONEncoder, ensure_ascii=False)
    name = _store(storages[storage], f"{prefix}/{table.label}.part-{page:05d}.json", body)
    return {"count": len(keys), "last": _json_key(keys[-1]), "part": name}


def write_document(
    table: SubjectTable, parts: list[str], storage: str, prefix: str, count: int
) -> str:
    """Gather a table's parts into its one JSON document, remove the parts, answer its name."""
    where = storages[storage]
    rows: list[Any] = []
    for part in parts:
        with where.open(part, "rb") as opened:
            rows.extend(json.loads(opened.read()))
    document = {"table": table.label, "field": table.field, "count": count, "rows": rows}
    body = json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=1)
    name = _store(where, f"{prefix}/{table.label}.json", body)
    for part in parts:
        where.delete(part)
    return name


def _store(storage: Storage, name: str, body: str) -> str:
    """Write ``body`` under ``name``, replacing what a repeated step wrote there before."""
    if storage.exists(name):
        storage.delete(name)
    return str(storage.save(name, ContentFile(body.encode())))
