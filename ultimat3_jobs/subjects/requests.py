"""``subject_export`` and ``subject_erase``: each writes an audit row, then enqueues a durable
job that builds its plan once (the registered tables, as a step) and then works one step per
page of each planned table, so a job resumed after a crash repeats no stored page.

The two jobs are declared when this module loads (any name of ``ultimat3_jobs.subjects`` loads
it): register the tables where jobs are declared, so that workers load it too.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.files.storage import InvalidStorageError, storages
from django.utils import timezone

from ultimat3_jobs.errors import SubjectRequestInvalid, SubjectTableUnknown
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import Retry, job
from ultimat3_jobs.subjects.passes import erase_page, export_page, write_document
from ultimat3_jobs.subjects.registry import (
    SubjectTable,
    check_reach,
    registered_subject_tables,
    table_named,
)
from ultimat3_jobs.subjects.registry import (
    register_subject_table as register_subject_table,  # the package's lazy name loads it here
)
from ultimat3_jobs.subjects.tables import SubjectRequest

EXPORT_JOB = "ultimat3_jobs.subjects.export"
ERASE_JOB = "ultimat3_jobs.subjects.erase"
EXPORT_PREFIX = "subject-exports"
_RETRY = Retry(attempts=10, backoff_base_seconds=1, backoff_cap_seconds=60)


def subject_digest(subject_id: Any) -> str:
    """The keyed digest an audit row holds instead of the subject id (HMAC-SHA256 of its text
    under ``SECRET_KEY``)."""
    key = str(settings.SECRET_KEY).encode()
    return hmac.new(key, str(subject_id).encode(), hashlib.sha256).hexdigest()


def _check_request(subject_id: Any, requested_by: Any) -> None:
    if isinstance(subject_id, bool) or not isinstance(subject_id, (int, str)) or subject_id == "":
        raise SubjectRequestInvalid(
            f"subject_id must be an integer or non-empty text; got {type(subject_id).__name__}",
            field="subject_id",
        )
    if not isinstance(requested_by, str) or not 1 <= len(requested_by) <= 200:
        raise SubjectRequestInvalid(
            "requested_by must say who asked, in 1 to 200 characters", field="requested_by"
        )
    if not registered_subject_tables():
        raise SubjectRequestInvalid(
            "no subject table is registered (register_subject_table(model, field))",
            field="tables",
        )
    check_reach(registered_subject_tables())


def subject_export(
    subject_id: int | str, *, requested_by: str, storage: str = "default"
) -> SubjectRequest:
    """Export every registered table's rows of ``subject_id``: one JSON document per table,
    written through Django's storage ``storage`` under ``subject-exports/<request id>/``.
    Answers the audit row (its ``job_id`` is the export's job)."""
    _check_request(subject_id, requested_by)
    try:
        storages[storage]
    except InvalidStorageError as exc:
        raise SubjectRequestInvalid(
            f"storage {storage!r:.80} is not in the STORAGES setting", field="storage"
        ) from exc
    return _request("export", EXPORT_JOB, subject_id, requested_by, storage)


def subject_erase(subject_id: int | str, *, requested_by: str) -> SubjectRequest:
    """Erase ``subject_id``'s rows of every registered table, each as its table says (delete,
    anonymize, or its callable). Answers the audit row (its ``job_id`` is the erase's job)."""
    _check_request(subject_id, requested_by)
    return _request("erase", ERASE_JOB, subject_id, requested_by, "")


def _request(
    kind: str, job_name: str, subject_id: Any, requested_by: str, storage: str
) -> SubjectRequest:
    request = SubjectRequest.objects.create(
        kind=kind,
        subject_digest=subject_digest(subject_id),
        requested_by=requested_by,
        storage=storage,
    )
    handle = export_job if kind == "export" else erase_job
    assert handle.name == job_name
    extra = {"storage": storage} if kind == "export" else {}
    result = handle.using(enqueued_by=requested_by).enqueue(
        request_id=request.id, subject_id=subject_id, **extra
    )
    SubjectRequest.objects.filter(id=request.id).update(job_id=result.id)
    request.job_id = result.id
    return request


# -- the jobs ----------------------------------------------------------------------------------


def _start(request_id: int, subject_id: Any) -> list[dict[str, Any]]:
    """The plan, built once: every registered table and its count of the subject's rows. The
    audit row's counts start at zero per table (no page runs before this step is stored)."""
    tables = registered_subject_tables()
    check_reach(tables)
    plan = [{"table": t.label, "rows": t.rows(subject_id).count()} for t in tables]
    SubjectRequest.objects.filter(id=request_id).update(
        state="running", plan=plan, counts={t.label: 0 for t in tables}
    )
    return plan


def _planned(label: str) -> SubjectTable:
    table = table_named(label)
    if table is None:
        raise SubjectTableUnknown(
            f"the request's plan names {label}, which is no longer a registered subject table; "
            "nothing more was erased or exported"
        )
    return table


def _pages(
    ctx: JobContext, kind: str, table: SubjectTable, work: Callable[[Any, int], dict[str, Any]]
) -> tuple[int, list[str]]:
    """Run one step per page of ``table`` until a page comes back short."""
    page, after, total, parts = 0, None, 0, []
    while True:
        out = ctx.step.run(
            f"{kind}:{table.label}:{page}", lambda after=after, page=page: work(after, page)
        )
        total += int(out["count"])
        if out.get("part"):
            parts.append(str(out["part"]))
        if out["count"] < table.page_size:
            return total, parts
        after, page = out["last"], page + 1


def _finish(
    request_id: int, counts: dict[str, int] | None, documents: dict[str, str]
) -> dict[str, int]:
    """Mark the request done; answer its counts. An erase passes no ``counts``: each page
    added its own to the audit row, in the page's transaction."""
    done: dict[str, Any] = {"state": "done", "documents": documents, "finished_at": timezone.now()}
    if counts is not None:
        done["counts"] = counts
    SubjectRequest.objects.filter(id=request_id).update(**done)
    return dict(SubjectRequest.objects.get(id=request_id).counts)


def _settled(ctx: JobContext, ending: str) -> None:
    if ending != "completed":
        SubjectRequest.objects.filter(job_id=ctx.job_id).exclude(state="done").update(
            state="failed", finished_at=timezone.now(), error=f"the job ended {ending}"
        )


@job(name=ERASE_JOB, tenant="none", retry=_RETRY, sensitive=("subject_id",), on_settled=_settled)
def erase_job(ctx: JobContext, *, request_id: int, subject_id: Any) -> dict[str, Any]:
    """Erase one subject's rows, table by table, one step per page."""
    plan = ctx.step.run("plan", lambda: _start(request_id, subject_id))
    for entry in plan:
        table = _planned(entry["table"])
        _pages(
            ctx,
            "erase",
            table,
            lambda after, _page, t=table: erase_page(t, subject_id, after, request_id),
        )
    counts = ctx.step.run("finish", lambda: _finish(request_id, None, {}))
    return {"request": request_id, "counts": counts}


@job(name=EXPORT_JOB, tenant="none", retry=_RETRY, sensitive=("subject_id",), on_settled=_settled)
def export_job(
    ctx: JobContext, *, request_id: int, subject_id: Any, storage: str = "default"
) -> dict[str, Any]:
    """Export one subject's rows: one JSON document per table, written page by page."""
    plan = ctx.step.run("plan", lambda: _start(request_id, subject_id))
    prefix = f"{EXPORT_PREFIX}/{request_id}"
    counts: dict[str, int] = {}
    documents: dict[str, str] = {}
    for entry in plan:
        table = _planned(entry["table"])
        count, parts = _pages(
            ctx,
            "export",
            table,
            lambda after, page, t=table: export_page(t, subject_id, after, storage, prefix, page),
        )
        counts[table.label] = count
        documents[table.label] = ctx.step.run(
            f"document:{table.label}",
            lambda t=table, p=parts, c=count: write_document(t, p, storage, prefix, c),
        )
    ctx.step.run("finish", lambda: _finish(request_id, counts, documents))
    return {"request": request_id, "counts": counts, "documents": documents}
