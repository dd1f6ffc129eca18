"""Ids: time-ordered UUIDv7, strictly increasing within a process."""

from __future__ import annotations

import copy
import itertools
import pickle
import time
import uuid

from ultimat3_jobs.types import new_job_id, new_job_ids


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


def test_a_batch_of_ids_continues_the_same_strictly_increasing_sequence() -> None:
    ids = [new_job_id(), *new_job_ids(5_000), new_job_id(), *new_job_ids(3), *new_job_ids(0)]
    assert len(ids) == 5_005
    assert all(earlier < later for earlier, later in itertools.pairwise(ids))
    assert {(job_id.version, job_id.variant) for job_id in ids} == {(7, uuid.RFC_4122)}


def test_a_batch_id_is_an_ordinary_uuid() -> None:
    (job_id,) = new_job_ids(1)
    same = uuid.UUID(str(job_id))
    assert (job_id == same, hash(job_id) == hash(same)) == (True, True)
    assert pickle.loads(pickle.dumps(job_id)) == job_id
    assert copy.deepcopy(job_id) == job_id and job_id.is_safe is uuid.SafeUUID.unknown
