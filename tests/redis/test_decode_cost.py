"""What the worker's side pays to read a claim's answer, per claimed job (61k -> 41k Python
instructions under callgrind): its id and claim token arrive as the canonical text the store
holds, so they become UUIDs straight from their 32 hex digits, not through ``uuid.UUID``'s
parse of every spelling it accepts (urn:, braces, no dashes); and its ``ClaimedJob`` gets its
slots set directly, not through the frozen dataclass's keyword ``__init__``."""

from __future__ import annotations

import dataclasses
import pickle
import uuid
from typing import Any

import pytest

from tests.drivers.support import claim, request
from ultimat3_jobs.drivers.redis import RedisDriver, codec
from ultimat3_jobs.types import ClaimedJob


def test_a_claims_ids_and_tokens_skip_the_uuid_parse(
    redis_store: RedisDriver, monkeypatch: pytest.MonkeyPatch
):
    enqueued = [request() for _ in range(20)]
    redis_store.job_enqueue_many(requests=enqueued)
    parses: list[Any] = []
    parse = uuid.UUID.__init__

    def counted(self: uuid.UUID, *args: Any, **kwargs: Any) -> None:
        parses.append(args or kwargs)
        parse(self, *args, **kwargs)

    monkeypatch.setattr(uuid.UUID, "__init__", counted)
    claimed = claim(redis_store, limit=20)
    monkeypatch.undo()
    assert parses == []
    assert sorted(job.id for job in claimed) == sorted(r.id for r in enqueued)
    assert len({job.claim_token for job in claimed}) == 20


@pytest.mark.parametrize("spelling", [str, lambda s: s.encode()])
def test_a_uuid_from_the_stores_text_is_the_one_uuid_parses(spelling: Any):
    for made in (uuid.uuid4(), uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1)):
        read = codec.uuid_of(spelling(str(made)))
        assert (type(read), read, hash(read), str(read)) == (uuid.UUID, made, hash(made), str(made))
        assert read.is_safe == made.is_safe and read.version == made.version
        assert pickle.loads(pickle.dumps(read)) == made


NOT_CANONICAL = ["", "not-a-uuid", "{12345678-1234-5678-1234-567812345678}", "0" * 36]


@pytest.mark.parametrize("text", NOT_CANONICAL)
def test_text_not_in_the_stores_spelling_goes_through_the_uuid_parse(text: str):
    if text.startswith("{"):
        assert codec.uuid_of(text) == uuid.UUID(text)
    else:
        with pytest.raises(ValueError):
            codec.uuid_of(text)


def test_a_claimed_job_is_built_without_the_dataclass_init_and_equals_one_built_with_it(
    redis_store: RedisDriver, monkeypatch: pytest.MonkeyPatch
):
    redis_store.job_enqueue_many(requests=[request(tenant_id="t", traceparent="tp")])
    inits: list[Any] = []
    init = ClaimedJob.__init__

    def counted(self: ClaimedJob, **kwargs: Any) -> None:
        inits.append(kwargs)
        init(self, **kwargs)

    monkeypatch.setattr(ClaimedJob, "__init__", counted)
    (job,) = claim(redis_store, limit=1)
    monkeypatch.undo()
    assert inits == []
    rebuilt = ClaimedJob(**{name: getattr(job, name) for name in codec.CLAIMED_FIELDS})
    assert job == rebuilt and repr(job) == repr(rebuilt)
    assert (job.tenant_id, job.traceparent, job.input) == ("t", "tp", {"n": 1})


def test_the_claim_rows_fields_are_the_claimed_jobs_fields():
    """``codec._claimed`` sets every slot of ``ClaimedJob`` and runs no ``__post_init__``: a
    field added to the class must be added to the claim's row too."""
    assert tuple(f.name for f in dataclasses.fields(ClaimedJob)) == codec.CLAIMED_FIELDS
    assert not hasattr(ClaimedJob, "__post_init__")
