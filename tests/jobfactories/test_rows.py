"""``export_rows()`` and ``import_rows()``: one object per exported page, named by its index;
an import checkpointed at the byte offset of its next record, its error report without values;
an export then an import round-trips a table."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage

from tests.testapp.models import Effect, SweepRow
from ultimat3_jobs.errors import ImportInvalid, ImportRecordInvalid, StorageUnknown
from ultimat3_jobs.factories import export_rows, import_rows
from ultimat3_jobs.models import Job, JobStep
from ultimat3_jobs.testing import run_enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def storage(tmp_path: Path) -> FileSystemStorage:
    return FileSystemStorage(location=str(tmp_path))


def read(storage: FileSystemStorage, path: str) -> bytes:
    with storage.open(path, "rb") as file:
        return file.read()


def result_of(handle) -> dict:
    queued = handle.enqueue()
    summary = run_enqueued()
    assert queued.id in summary.completed + summary.failed, summary
    return Job.objects.get(id=queued.id).result


ROUND_TRIP_ROWS = 10_000


def test_export_then_import_round_trips_a_10000_row_table_exactly(
    storage: FileSystemStorage,
) -> None:
    SweepRow.objects.bulk_create(
        [SweepRow(handled=n % 7, done=bool(n % 2)) for n in range(1, ROUND_TRIP_ROWS + 1)]
    )
    original = list(SweepRow.objects.order_by("id").values("id", "handled", "done"))
    exported = result_of(
        export_rows(
            "tests.rows.export",
            queryset=SweepRow.objects.all(),
            storage=storage,
            page_rows=3000,
            fields=["id", "handled", "done"],
            prefix="dump",
        )
    )
    assert exported == {
        "rows": ROUND_TRIP_ROWS,
        "objects": [f"dump/00000{n}.jsonl" for n in range(4)],
    }
    whole = b"".join(read(storage, path) for path in exported["objects"])
    storage.save("dump/all.jsonl", ContentFile(whole))
    SweepRow.objects.all().delete()

    def load(records: list[dict]) -> None:
        SweepRow.objects.bulk_create([SweepRow(**record) for record in records])

    imported = result_of(
        import_rows(
            "tests.rows.import",
            storage_path="dump/all.jsonl",
            storage=storage,
            handle=load,
            page_bytes=40_000,
            max_record_bytes=200,
        )
    )
    assert imported == {
        "rows": ROUND_TRIP_ROWS,
        "handled": ROUND_TRIP_ROWS,
        "errors": [],
        "refused": 0,
    }
    assert list(SweepRow.objects.order_by("id").values("id", "handled", "done")) == original
    pages = JobStep.objects.filter(job__name="tests.rows.import").count()
    assert pages > 5, "one step per page of at most page_bytes"


def by_org(input: dict) -> str | None:
    return input.get("org_id")


def test_a_tenant_scoped_export_never_reads_another_tenants_rows(
    storage: FileSystemStorage,
) -> None:
    job_id = uuid.uuid4()
    labels = ["org-a" if n % 3 else "org-b" for n in range(50)]
    Effect.objects.bulk_create(
        [
            Effect(job_id=job_id, attempt=1, worker_pid=n, label=label)
            for n, label in enumerate(labels)
        ]
    )
    dump = export_rows(
        "tests.rows.tenant",
        queryset=Effect.objects.all(),
        storage=storage,
        page_rows=7,
        fields=["id", "label", "worker_pid"],
        prefix="orgs",
        tenant=by_org,
        tenant_field="label",
    )
    for org in ("org-a", "org-b"):
        queued = dump.enqueue(org_id=org)
        summary = run_enqueued()
        assert summary.completed == (queued.id,), summary.errors
        result = Job.objects.get(id=queued.id).result
        assert all(path.startswith(f"orgs/{org}/") for path in result["objects"])
        seen = [
            json.loads(line)
            for path in result["objects"]
            for line in read(storage, path).splitlines()
        ]
        expected = list(
            Effect.objects.filter(label=org).order_by("id").values_list("id", flat=True)
        )
        assert [record["id"] for record in seen] == expected
        assert {record["label"] for record in seen} == {org}
        assert result["rows"] == labels.count(org)
    # A run with no tenant reads nothing: it fails for good before its first page.
    queued = dump.enqueue()
    summary = run_enqueued()
    assert "X_JOB_TENANT_MISMATCH" in summary.errors[queued.id].message
    assert not JobStep.objects.filter(job_id=queued.id).exists()


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        ({"tenant": by_org}, "tenant_field must name a field of testapp.Effect"),
        ({"tenant": by_org, "tenant_field": "org"}, "tenant_field must name a field"),
        ({"tenant_field": "label"}, "tenant_field needs a tenant rule"),
        ({"tenant": "org"}, 'tenant must be "none" or a callable'),
    ],
)
def test_a_bad_tenant_scope_is_refused(storage, options, rule) -> None:
    with pytest.raises(ImportInvalid, match=rule):
        export_rows(
            "tests.rows.badtenant",
            queryset=Effect.objects.all(),
            storage=storage,
            page_rows=10,
            fields=["id"],
            **options,
        )


def test_a_replayed_export_page_overwrites_its_own_object(storage: FileSystemStorage) -> None:
    SweepRow.objects.bulk_create([SweepRow() for _ in range(3)])
    dump = export_rows(
        "tests.rows.again",
        queryset=SweepRow.objects.all(),
        storage=storage,
        page_rows=10,
        fields=["id"],
        format="csv",
    )
    result_of(dump)
    result_of(dump)
    assert storage.listdir("tests.rows.again") == ([], ["000000.csv"])
    text = read(storage, "tests.rows.again/000000.csv").decode()
    assert text.splitlines()[0] == "id" and len(text.splitlines()) == 4


def test_malformed_records_are_reported_without_their_values(storage: FileSystemStorage) -> None:
    lines = [json.dumps({"email": f"user{n}@example.com"}) for n in range(10)]
    lines[2] = '{"email": "secret-value'  # not JSON
    lines[5] = json.dumps({"email": "not-an-email-secret"})
    lines[7] = json.dumps({"email": "x" * 500})  # too long
    storage.save("in.jsonl", ContentFile(("\n".join(lines) + "\n").encode()))
    handled: list = []

    def parse(record: dict) -> str:
        if "@" not in record.get("email", ""):
            raise ImportRecordInvalid(field="email", rule="must be an email address")
        return record["email"]

    result = result_of(
        import_rows(
            "tests.rows.report",
            storage_path="in.jsonl",
            storage=storage,
            handle=handled.extend,
            parse=parse,
            page_bytes=300,
            max_record_bytes=200,
            error_budget=3,
        )
    )
    assert result["errors"] == [
        {"row": 3, "field": "", "rule": "not JSON"},
        {"row": 6, "field": "email", "rule": "must be an email address"},
        {"row": 8, "field": "", "rule": "longer than max_record_bytes"},
    ]
    assert "secret" not in json.dumps(result)
    assert len(handled) == 7 and result["rows"] == 10


def test_more_errors_than_the_budget_fail_the_run(storage: FileSystemStorage) -> None:
    storage.save("bad.jsonl", ContentFile(b"nope\n[1]\n{}\n"))
    refused = import_rows(
        "tests.rows.budget",
        storage_path="bad.jsonl",
        storage=storage,
        handle=lambda records: None,
        page_bytes=100,
        max_record_bytes=50,
        error_budget=1,
    )
    queued = refused.enqueue()
    summary = run_enqueued()
    message = summary.errors[queued.id].message
    assert "X_IMPORT_ERRORS_EXCEEDED" in message and "the first at row 1: not JSON" in message


def test_each_page_resumes_at_the_byte_offset_of_its_next_record(
    storage: FileSystemStorage,
) -> None:
    body = b"".join(json.dumps({"n": n}).encode() + b"\n" for n in range(20))
    storage.save("n.jsonl", ContentFile(body))
    result_of(
        import_rows(
            "tests.rows.offsets",
            storage_path="n.jsonl",
            storage=storage,
            handle=lambda records: None,
            page_bytes=40,
            max_record_bytes=20,
        )
    )
    steps = JobStep.objects.filter(job__name="tests.rows.offsets").order_by("seq")
    offsets = [step.output["offset"] for step in steps]
    assert offsets == sorted(offsets) and offsets[-1] == len(body)
    assert all(body[offset - 1 : offset] == b"\n" for offset in offsets)


@pytest.mark.parametrize(
    ("options", "error", "rule"),
    [
        ({"page_bytes": 100, "max_record_bytes": 200}, ImportInvalid, "at least max_record_bytes"),
        ({"format": "xml"}, ImportInvalid, "format must be one of"),
        ({"storage": "nope"}, StorageUnknown, "not defined in settings.STORAGES"),
        ({"tenant": "org"}, ImportInvalid, 'tenant must be "none"'),
    ],
)
def test_a_bad_import_is_refused(storage, options, error, rule) -> None:
    declared = {
        "storage_path": "x.jsonl",
        "storage": storage,
        "handle": print,
        "page_bytes": 1000,
        "max_record_bytes": 100,
        **options,
    }
    with pytest.raises(error, match=rule):
        import_rows("tests.rows.bad", **declared)
