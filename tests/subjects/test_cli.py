"""``manage.py jobs subjects``: subject requests with their state and counts, found by subject
id through its digest, never showing the id or the data."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ultimat3_jobs.models import SubjectRequest
from ultimat3_jobs.subjects.requests import subject_digest

pytestmark = pytest.mark.django_db


def jobs_cli(*args: str) -> str:
    out = StringIO()
    call_command("jobs", "subjects", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def requests() -> list[SubjectRequest]:
    return [
        SubjectRequest.objects.create(
            kind=kind,
            subject_digest=subject_digest(who),
            requested_by=f"dpo-{who}-{kind}",
            state=state,
            counts=counts,
        )
        for who, kind, state, counts in (
            ("alice", "export", "done", {"featureapp.Message": 3}),
            ("bob", "erase", "running", {"featureapp.Profile": 2, "featureapp.Message": 0}),
            ("alice", "erase", "done", {"featureapp.Message": 3, "featureapp.Profile": 1}),
        )
    ]


def test_the_cli_lists_requests_newest_first_with_state_and_counts(requests) -> None:
    listed = json.loads(jobs_cli("--json"))["requests"]
    assert [r["requested_by"] for r in listed] == [
        "dpo-alice-erase",
        "dpo-bob-erase",
        "dpo-alice-export",
    ]
    assert listed[0]["state"] == "done"
    assert listed[0]["counts"] == {"featureapp.Message": 3, "featureapp.Profile": 1}
    text = jobs_cli()
    assert "dpo-bob-erase: featureapp.Message 0, featureapp.Profile 2" in text
    assert "running" in text and "alice" not in text.replace("dpo-alice", "")


def test_the_cli_finds_one_subjects_requests_and_filters(requests) -> None:
    alice = json.loads(jobs_cli("--subject", "alice", "--json"))["requests"]
    assert [r["requested_by"] for r in alice] == ["dpo-alice-erase", "dpo-alice-export"]
    erasures = json.loads(jobs_cli("--subject", "alice", "--kind", "erase", "--json"))
    assert [r["id"] for r in erasures["requests"]] == [requests[2].id]
    running = json.loads(jobs_cli("--state", "running", "--json"))["requests"]
    assert [r["requested_by"] for r in running] == ["dpo-bob-erase"]
    assert json.loads(jobs_cli("--limit", "1", "--json"))["requests"][0]["id"] == requests[2].id
    assert "no subject request matches" in jobs_cli("--subject", "carol")
    with pytest.raises(CommandError, match="--limit"):
        jobs_cli("--limit", "0")
