"""Subject export and erase over three registered tables (delete, anonymize, a callable): exactly
the subject's rows are reached, the plan is built once, a request interrupted between steps
resumes without repeating a stored page, and the audit row holds counts, never the data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db.models import QuerySet

from tests.featureapp.models import Message, MessageReply, Profile, Purchase
from ultimat3_jobs.errors import (
    SubjectFieldUnknown,
    SubjectRequestInvalid,
    SubjectTableInvalid,
)
from ultimat3_jobs.models import Job, JobStep, SubjectRequest
from ultimat3_jobs.subjects import registry as subject_registry
from ultimat3_jobs.subjects.registry import register_subject_table
from ultimat3_jobs.subjects.requests import subject_digest, subject_erase, subject_export
from ultimat3_jobs.testing import run_enqueued, travel

pytestmark = pytest.mark.django_db(transaction=True)

crash = {"at_call": 0, "calls": 0}


def erase_messages(page: QuerySet[Message]) -> None:
    crash["calls"] += 1
    if crash["calls"] == crash["at_call"]:
        raise RuntimeError("worker lost mid-way (simulated)")
    page.update(author="", body="[erased]")


@pytest.fixture
def tables() -> Iterator[None]:
    subject_registry._tables.clear()
    register_subject_table(Profile, "subject", erase="delete", page_size=2)
    register_subject_table(
        Purchase, "subject", erase="anonymize", anonymize={"address": ""}, page_size=2
    )
    register_subject_table(Message, "author", erase=erase_messages, page_size=2)
    yield
    subject_registry._tables.clear()
    crash.update(at_call=0, calls=0)


def _data() -> None:
    for who in ("alice", "bob"):
        Profile.objects.bulk_create(
            Profile(subject=who, display_name=f"{who}{n}") for n in range(3)
        )
        Purchase.objects.bulk_create(
            Purchase(subject=who, address=f"{who} street", total=n) for n in range(5)
        )
        Message.objects.bulk_create(Message(author=who, body=f"hi from {who}") for _ in range(3))


def _snapshot(who: str) -> dict[str, Any]:
    return {
        "profiles": list(
            Profile.objects.filter(subject=who).values_list("display_name", flat=True)
        ),
        "purchases": list(
            Purchase.objects.filter(subject=who).values_list("address", "total").order_by("id")
        ),
        "messages": list(Message.objects.filter(author=who).values_list("body", flat=True)),
    }


def test_erase_reaches_exactly_the_subjects_rows_and_resumes_after_an_interruption(
    tables: None,
) -> None:
    _data()
    bob_before = _snapshot("bob")
    purchases = Purchase.objects.count()
    crash["at_call"] = 2  # the second page of the first table (Message) fails
    request = subject_erase("alice", requested_by="dpo@example.com")
    first = run_enqueued()
    assert first.retried == (request.job_id,), first
    done_steps = set(JobStep.objects.filter(job_id=request.job_id).values_list("name", flat=True))
    assert done_steps == {"plan", "erase:featureapp.Message:0"}
    assert Message.objects.filter(author="alice").count() == 1  # its first page was erased
    assert Profile.objects.filter(subject="alice").count() == 3  # not reached yet
    # A table registered after the plan was built is not reached by this request.
    register_subject_table(MessageReply, "text", erase="delete")
    travel(120)
    second = run_enqueued()
    assert second.completed == (request.job_id,), second
    assert crash["calls"] == 3  # page 0 once, page 1 failed, page 1 again: page 0 not repeated
    job = Job.objects.get(id=request.job_id)
    assert (job.state, job.attempt) == ("completed", 2)
    assert _snapshot("alice") == {"profiles": [], "purchases": [], "messages": []}
    assert Purchase.objects.count() == purchases  # anonymized, not deleted
    assert set(Purchase.objects.filter(subject=None).values_list("address", flat=True)) == {""}
    assert Message.objects.filter(author="", body="[erased]").count() == 3
    assert _snapshot("bob") == bob_before
    audit = SubjectRequest.objects.get(id=request.id)
    assert (audit.kind, audit.state, audit.requested_by) == ("erase", "done", "dpo@example.com")
    assert audit.counts == {
        "featureapp.Message": 3,
        "featureapp.Profile": 3,
        "featureapp.Purchase": 5,
    }
    assert [entry["table"] for entry in audit.plan] == [
        "featureapp.Message",
        "featureapp.Profile",
        "featureapp.Purchase",
    ]
    assert audit.subject_digest == subject_digest("alice")
    stored = json.dumps([audit.plan, audit.counts, audit.documents, audit.error])
    assert "alice" not in stored and "street" not in stored
    # Each stored page ran once: the replay took the first attempt's pages from their steps.
    assert JobStep.objects.filter(job_id=request.job_id, name="plan").count() == 1


def test_export_writes_one_document_per_table_through_the_storage(
    tables: None, settings: Any, tmp_path: Path
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "exports": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path)},
        },
    }
    _data()
    request = subject_export("alice", requested_by="dpo@example.com", storage="exports")
    assert run_enqueued().completed == (request.job_id,)
    audit = SubjectRequest.objects.get(id=request.id)
    assert audit.state == "done"
    assert audit.counts == {
        "featureapp.Message": 3,
        "featureapp.Profile": 3,
        "featureapp.Purchase": 5,
    }
    files = sorted(p.name for p in (tmp_path / "subject-exports" / str(request.id)).iterdir())
    assert files == [
        "featureapp.Message.json",
        "featureapp.Profile.json",
        "featureapp.Purchase.json",
    ]
    document = json.loads((tmp_path / audit.documents["featureapp.Purchase"]).read_text())
    assert document["count"] == 5 and {row["subject"] for row in document["rows"]} == {"alice"}
    assert _snapshot("alice")["profiles"]  # an export changes nothing


def test_refusals(tables: None) -> None:
    with pytest.raises(SubjectFieldUnknown, match="nope"):
        register_subject_table(Profile, "nope")
    with pytest.raises(SubjectTableInvalid, match="not nullable"):
        register_subject_table(Profile, "subject", erase="anonymize")
    with pytest.raises(SubjectTableInvalid, match="erase must be"):
        register_subject_table(Profile, "subject", erase="shred")  # type: ignore[arg-type]
    with pytest.raises(SubjectRequestInvalid, match="requested_by"):
        subject_erase("alice", requested_by="")
    with pytest.raises(SubjectRequestInvalid, match="storage"):
        subject_export("alice", requested_by="x", storage="nowhere")
    # Deleting messages would cascade into MessageReply, which is not registered.
    register_subject_table(Message, "author", erase="delete")
    with pytest.raises(SubjectTableInvalid, match="MessageReply"):
        subject_erase("alice", requested_by="x")
    assert not SubjectRequest.objects.exists()
    subject_registry._tables.clear()
    with pytest.raises(SubjectRequestInvalid, match="no subject table"):
        subject_erase("alice", requested_by="x")
