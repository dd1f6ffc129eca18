"""Ids: time-ordered UUIDv7, strictly increasing within a process."""

from __future__ import annotations

import time

from ultimat3_jobs.types import new_job_id


def test_new_job_id_is_version_7_with_the_rfc_variant() -> None:
    job_id = new_job_id()
    assert job_id.version == 7
    assert job_id.variant == "specified in RFC 4122"


def test_new_job_id_carries_the_current_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    job_id = new_job_id()
    after = time.time_ns() // 1_000_000
    assert before <= job_id.int >> 80 <= after + 1


def test_new_job_ids_strictly_increase_even_within_one_millisecond() -> None:
    ids = [new_job_id() for _ in range(20_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
