"""``export_rows(name, ...)`` and ``import_rows(name, ...)``: rows out to, and in from, files
kept through Django's storage API, one durable step per page.

Layer: factories. An export writes ONE object per page, named by the page's index (a replayed
page overwrites the same object), reading the queryset by primary key after the stored cursor.
An import reads one page per step from the BYTE OFFSET the previous step stored: record
boundaries are found on bytes (one record per line), no state is carried between steps but the
offset and the row count. ``handle(records)`` is AT LEAST ONCE per page. A malformed record is
reported (row number, field, rule; never the value) and skipped, up to ``error_budget``.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections.abc import Callable
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import InvalidStorageError, Storage, storages

from ultimat3_jobs.errors import (
    ImportErrorsExceeded,
    ImportInvalid,
    ImportRecordInvalid,
    JobTenantMismatch,
    StorageUnknown,
    Terminal,
)
from ultimat3_jobs.factories.sources import cursor_of
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobHandle, job
from ultimat3_jobs.model.job_definition import TenantRule
from ultimat3_jobs.values import whole_number

FORMATS = ("jsonl", "csv")
PAGE_ROWS_MAX = 100_000
REPORT_MAX = 1000
"""At most this many refused records are listed in an import's result (all are counted)."""


def _storage(kind: str, name: str, storage: Storage | str) -> Callable[[], Storage]:
    if isinstance(storage, Storage):
        return lambda: storage
    if not isinstance(storage, str):
        raise ImportInvalid(
            f"{kind} {name!r}: storage must be a Storage or an alias; got {storage!r}"
        )

    def find() -> Storage:
        try:
            return storages[storage]
        except InvalidStorageError:
            raise StorageUnknown(
                f"{kind} {name!r}: storage {storage!r} is not defined in settings.STORAGES"
            ) from None

    find()  # refused at declaration when the alias is unknown
    return find


def _check(kind: str, name: str, format: str) -> None:
    if format not in FORMATS:
        raise ImportInvalid(
            f"{kind} {name!r}: format must be one of {', '.join(FORMATS)}; got {format!r}"
        )


def _export_tenant(name: str, queryset: Any, tenant: Any, tenant_field: str | None) -> None:
    """``tenant="none"`` exports the whole queryset (no ``tenant_field``); a tenant rule (a
    callable of the input) needs ``tenant_field``, a field of the queryset's model."""
    if tenant == "none":
        if tenant_field is not None:
            raise ImportInvalid(
                f'export_rows {name!r}: tenant_field needs a tenant rule, not tenant="none"; '
                f"got {tenant_field!r}"
            )
        return
    if not callable(tenant):
        raise ImportInvalid(
            f'export_rows {name!r}: tenant must be "none" or a callable of the input; '
            f"got {tenant!r}"
        )
    fields = {f.name for f in queryset.model._meta.get_fields()} | {
        getattr(f, "attname", f.name) for f in queryset.model._meta.get_fields()
    }
    if not isinstance(tenant_field, str) or tenant_field not in fields:
        raise ImportInvalid(
            f"export_rows {name!r}: tenant_field must name a field of "
            f"{queryset.model._meta.label} holding the tenant; got {tenant_field!r}"
        )


def _tenant_rows(name: str, queryset: Any, tenant_field: str | None, tenant_id: Any) -> Any:
    """The rows one run may read: all of them without a tenant rule; else only the run's
    tenant's (the tenant the worker installed from the job's own row). A scoped run without a
    tenant reads nothing and fails for good."""
    if tenant_field is None:
        return queryset
    if tenant_id is None:
        raise JobTenantMismatch(
            f"export_rows {name!r} is tenant-scoped but this run has no tenant: its input must "
            "name one"
        )
    return queryset.filter(**{tenant_field: tenant_id})


def export_rows(
    name: str,
    *,
    queryset: Any,
    storage: Storage | str,
    page_rows: int,
    fields: list[str],
    prefix: str | None = None,
    format: str = "jsonl",
    tenant: TenantRule = "none",
    tenant_field: str | None = None,
    queue: str | None = None,
) -> JobHandle:
    """Declare an export of ``queryset``'s ``fields`` (read by primary key), ``page_rows`` rows
    per object ``<prefix>/<page index>.<format>`` in ``storage`` (an alias of
    ``settings.STORAGES`` or a Storage). ``tenant="none"`` exports every row; a tenant rule
    (``tenant=lambda input: input["org_id"]``) with ``tenant_field="org_id"`` makes each run
    read only the rows of the tenant it runs for, into ``<prefix>/<tenant>/<page index>``."""
    _check("export_rows", name, format)
    _export_tenant(name, queryset, tenant, tenant_field)
    if not whole_number(page_rows, 1, PAGE_ROWS_MAX):
        rule = f"page_rows must be an integer from 1 to {PAGE_ROWS_MAX}"
        raise ImportInvalid(f"export_rows {name!r}: {rule}; got {page_rows!r}")
    if isinstance(fields, str) or not fields:
        raise ImportInvalid(
            f"export_rows {name!r}: fields must be a non-empty list; got {fields!r}"
        )
    store = _storage("export_rows", name, storage)
    folder = prefix if prefix is not None else name
    ordered = queryset.order_by("pk")

    def page(index: int, cursor: Any, tenant_id: str | None) -> dict[str, Any]:
        scoped = _tenant_rows(name, ordered, tenant_field, tenant_id)
        found = scoped if cursor is None else scoped.filter(pk__gt=cursor)
        rows = list(found.values("pk", *fields)[:page_rows])
        where = folder if tenant_field is None else f"{folder}/{tenant_id}"
        path = f"{where}/{index:06d}.{format}"
        target = store()
        if target.exists(path):
            target.delete(path)  # a replayed page overwrites its own object
        target.save(
            path, ContentFile(_encode([{f: r[f] for f in fields} for r in rows], fields, format))
        )
        following = cursor_of(rows[-1]["pk"]) if rows else cursor
        return {"path": path, "rows": len(rows), "cursor": following, "done": len(rows) < page_rows}

    def body(ctx: JobContext, **input: Any) -> dict[str, Any]:
        """The input only names the tenant (through the rule); the rows read are the tenant's
        the worker installed, never one named elsewhere."""
        cursor, rows, paths = None, 0, []
        _tenant_rows(name, ordered, tenant_field, ctx.tenant_id)  # refused before any read
        while True:
            read = functools.partial(page, len(paths), cursor, ctx.tenant_id)
            done = ctx.step.run(f"page:{len(paths)}", read)
            paths.append(done["path"])
            rows += done["rows"]
            cursor = done["cursor"]
            if done["done"]:
                return {"rows": rows, "objects": paths}

    def whole(ctx: JobContext) -> dict[str, Any]:
        return body(ctx)

    run = whole if tenant_field is None else body
    run.__qualname__ = f"export_rows[{name}]"
    return job(name=name, queue=queue, tenant=tenant)(run)


def _encode(rows: list[dict[str, Any]], fields: list[str], format: str) -> bytes:
    if format == "jsonl":
        return b"".join(json.dumps(row, default=str).encode() + b"\n" for row in rows)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue().encode()


def import_rows(
    name: str,
    *,
    storage_path: str,
    storage: Storage | str,
    handle: Callable[[list[Any]], Any],
    page_bytes: int,
    max_record_bytes: int,
    format: str = "jsonl",
    parse: Callable[[dict[str, Any]], Any] | None = None,
    error_budget: int = 0,
    tenant: str = "none",
    queue: str | None = None,
) -> JobHandle:
    """Declare an import of the file ``storage_path``: pages of at most ``page_bytes`` bytes,
    cut at record boundaries (one record per line; a CSV file's first line is its header).
    ``parse(record)`` (optional) answers what ``handle`` gets, or raises
    :class:`~ultimat3_jobs.errors.ImportRecordInvalid` naming the field and the rule. More than
    ``error_budget`` refused records fail the run (``X_IMPORT_ERRORS_EXCEEDED``)."""
    _check("import_rows", name, format)
    if tenant != "none":
        raise ImportInvalid(f'import_rows {name!r}: tenant must be "none"; got {tenant!r}')
    for option, value in (("page_bytes", page_bytes), ("max_record_bytes", max_record_bytes)):
        if not whole_number(value, 1):
            raise ImportInvalid(
                f"import_rows {name!r}: {option} must be a positive integer; got {value!r}"
            )
    if page_bytes < max_record_bytes:
        raise ImportInvalid(
            f"import_rows {name!r}: page_bytes must be at least max_record_bytes "
            f"({max_record_bytes}); got {page_bytes}"
        )
    if not callable(handle) or (parse is not None and not callable(parse)):
        raise ImportInvalid(f"import_rows {name!r}: handle and parse must be callable")
    store = _storage("import_rows", name, storage)
    read = functools.partial(_read_page, store, storage_path, page_bytes, max_record_bytes, format)

    def page(offset: int, first_row: int) -> dict[str, Any]:
        lines, following, done = read(offset)
        records, errors = _parse(lines, first_row, format, parse, store, storage_path)
        if records:
            handle(records)
        return {
            "offset": following,
            "rows": len(lines),
            "handled": len(records),
            "errors": errors,
            "done": done,
        }

    def body(ctx: JobContext) -> dict[str, Any]:
        offset, rows, handled, index, errors = 0, 0, 0, 0, []
        while True:
            done = ctx.step.run(f"page:{index}", functools.partial(page, offset, rows + 1))
            index += 1
            rows, handled = rows + done["rows"], handled + done["handled"]
            errors.extend(done["errors"])
            if len(errors) > error_budget:
                first = errors[0]
                exceeded = ImportErrorsExceeded(
                    f"import {name!r}: {len(errors)} record(s) refused, over the error budget "
                    f"of {error_budget}; the first at row {first['row']}: {first['rule']}"
                )
                raise Terminal(str(exceeded)) from exceeded
            offset = done["offset"]
            if done["done"]:
                return {
                    "rows": rows,
                    "handled": handled,
                    "errors": errors[:REPORT_MAX],
                    "refused": len(errors),
                }

    body.__qualname__ = f"import_rows[{name}]"
    return job(name=name, queue=queue, tenant="none")(body)


def _read_page(
    store: Callable[[], Storage],
    path: str,
    page_bytes: int,
    max_record: int,
    format: str,
    offset: int,
) -> tuple[list[bytes | None], int, bool]:
    """The records of one page from ``offset``: whole lines only, the next offset, whether the
    file ends there. A line longer than ``max_record`` is answered ``None`` (refused)."""
    with store().open(path, "rb") as file:
        if offset == 0 and format == "csv":
            offset = len(file.readline())  # the header is not a record
        file.seek(offset)
        chunk = file.read(page_bytes)
        if not chunk:
            return [], offset, True
        at_end = len(chunk) < page_bytes or not file.read(1)
        cut = len(chunk) if at_end else chunk.rfind(b"\n") + 1
        if cut == 0:
            # One line longer than a page, so than max_record_bytes: refused, skipped to its end.
            file.seek(offset + len(chunk))
            skipped = len(chunk)
            while more := file.read(page_bytes):
                newline = more.find(b"\n")
                if newline >= 0:
                    return [None], offset + skipped + newline + 1, False
                skipped += len(more)
            return [None], offset + skipped, True
        lines = chunk[:cut].splitlines()
        return [line if len(line) <= max_record else None for line in lines], offset + cut, at_end


def _header(store: Callable[[], Storage], path: str) -> list[str]:
    with store().open(path, "rb") as file:
        return next(csv.reader([file.readline().decode("utf-8")]))


def _parse(
    lines: list[bytes | None],
    first_row: int,
    format: str,
    parse: Callable[[dict[str, Any]], Any] | None,
    store: Callable[[], Storage],
    path: str,
) -> tuple[list[Any], list[dict[str, Any]]]:
    header = _header(store, path) if format == "csv" and lines else []
    records, errors = [], []
    for number, line in enumerate(lines, start=first_row):
        try:
            if line is None:
                raise ImportRecordInvalid(field="", rule="longer than max_record_bytes")
            record = _decode(line, format, header)
            records.append(parse(record) if parse is not None else record)
        except ImportRecordInvalid as exc:
            errors.append({"row": number, "field": exc.field, "rule": exc.rule})
    return records, errors


def _decode(line: bytes, format: str, header: list[str]) -> dict[str, Any]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportRecordInvalid(field="", rule="not UTF-8") from None
    if format == "csv":
        values = next(csv.reader([text]), [])
        if len(values) != len(header):
            raise ImportRecordInvalid(
                field="", rule=f"has {len(values)} fields, the header {len(header)}"
            )
        return dict(zip(header, values, strict=True))
    try:
        record = json.loads(text)
    except ValueError:
        raise ImportRecordInvalid(field="", rule="not JSON") from None
    if not isinstance(record, dict):
        raise ImportRecordInvalid(field="", rule="not a JSON object")
    return record
