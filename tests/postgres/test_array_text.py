"""A batch's columns travel as PostgreSQL array text written by the driver (``array_text``):
every value reads back as it was, through the casts ``job_enqueue_many`` makes, with Django's
client-side binding and with prepared server-side binding alike."""

from __future__ import annotations

import dis
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection

from tests.drivers.support import claim, request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.params import array_text, batch_params, uuid_array_text
from ultimat3_jobs.types import AttemptError, SettleItem

pytestmark = pytest.mark.django_db(transaction=True)

TEXTS = [
    "plain",
    'a "quoted" word',
    "back\\slash\\",
    "",
    "NULL",
    "{braces, commas}",
    " spaced ",
    "line\nbreak\ttab",
    "\u00e9t\u00e9 \U0001f600",
    '{"a":"x\\"y","b":[1,2]}',
    "'single'",
    None,
]


def _read(literal: str, cast: str) -> list[object]:
    with connection.cursor() as cursor:
        cursor.execute(f"select unnest(%s::{cast}[])", [literal])
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize(
    ("values", "cast"),
    [
        (TEXTS, "text"),
        (["same"] * 5, "text"),
        ([None] * 3, "text"),
        ([], "text"),
        ([0, -100, 100, 3], "int"),
        ([7] * 4, "int"),
        ([None, 1.5, 0.1, 1e-05, 86400.0], "float8"),
    ],
)
def test_values_read_back_as_written(values: list[object], cast: str) -> None:
    assert _read(array_text(values), cast) == values


def test_timestamps_read_back_as_the_same_instants() -> None:
    now = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
    east = now.astimezone(timezone(timedelta(hours=5, minutes=30)))
    values = [now, east, None, now + timedelta(days=400)]
    assert _read(array_text(values), "timestamptz") == values


def test_ids_read_back_as_written() -> None:
    ids = [uuid.uuid4() for _ in range(3)]
    literal = batch_params([request(id=job_id) for job_id in ids])["ids"]
    assert _read(literal, "uuid") == ids


def test_a_batch_of_awkward_inputs_is_stored_as_given(threshold) -> None:
    inputs = ['{"q":"say \\"hi\\""}', '{"p":"C:\\\\dir"}', '{"s":"{a,b}"}', '{"n":null}']
    requests = [request(input_json=text, tenant_id=f"t {i}") for i, text in enumerate(inputs)]
    results = PostgresDriver().job_enqueue_many(requests=requests)
    assert [result.status for result in results] == ["created"] * len(inputs)
    with connection.cursor() as cursor:
        cursor.execute(
            "select input, tenant_id from x_jobs where id = any(%s) order by id",
            [[r.id for r in requests]],
        )
        stored = cursor.fetchall()
    by_id = sorted(requests, key=lambda r: r.id)
    assert [(json.loads(text), tenant) for text, tenant in stored] == [
        (json.loads(r.input_json), r.tenant_id) for r in by_id
    ]


AWKWARD_RESULTS = ['{"q":"say \\"hi\\""}', '"C:\\\\dir"', '{"s":"{a,b}"}', '"\u00e9t\u00e9"']


@pytest.mark.parametrize("mixed", [False, True], ids=["acks only", "mixed endings"])
def test_a_flush_of_awkward_endings_is_stored_as_given(threshold, mixed: bool) -> None:
    """The settle's arrays (ids, tokens, results, progress, errors, delays, counts) travel as
    array text too: every value lands as it was, acks alone (``job_ack_many``) or mixed with
    a retry and a failure (``job_settle_many``)."""
    driver = PostgresDriver()
    driver.job_enqueue_many(requests=[request() for _ in range(len(AWKWARD_RESULTS) + 2)])
    jobs = claim(driver, limit=len(AWKWARD_RESULTS) + 2)
    error = AttemptError(attempt=1, error_class="x.Boom", message='a "quoted" \\ {b,c}')
    items = [
        SettleItem(
            job_id=job.id,
            claim_token=job.claim_token,
            action="complete",
            result_json=text,
            progress_json=None if n % 2 else '{"at":"{1,2}"}',
        )
        for n, (job, text) in enumerate(zip(jobs, AWKWARD_RESULTS, strict=False))
    ]
    retried, failed = jobs[-2:]
    if mixed:
        items += [
            SettleItem(
                job_id=retried.id,
                claim_token=retried.claim_token,
                action="retry",
                error=error,
                delay_seconds=30.5,
                counts_as_attempt=False,
            ),
            SettleItem(
                job_id=failed.id, claim_token=failed.claim_token, action="fail", error=error
            ),
        ]
    assert driver.job_settle_many(items=items) == {item.job_id for item in items}
    with connection.cursor() as cursor:
        cursor.execute(
            "select id, state, result, progress, errors, attempt,"
            " run_at > now() + interval '29 seconds' from x_jobs where id = any(%s)",
            [[item.job_id for item in items]],
        )
        stored = {row[0]: _decoded(row[1:]) for row in cursor.fetchall()}
    for n, item in enumerate(items[: len(AWKWARD_RESULTS)]):
        state, result, progress, _, _, _ = stored[item.job_id]
        assert (state, result) == ("completed", json.loads(item.result_json))
        assert progress == (None if n % 2 else {"at": "{1,2}"})
    if mixed:
        state, _, _, errors, attempt, later = stored[retried.id]
        assert (state, attempt, later) == ("queued", 0, True)
        assert errors[-1]["message"] == error.message
        state, _, _, errors, attempt, _ = stored[failed.id]
        assert (state, attempt, errors[-1]["message"]) == ("failed", 1, error.message)


def _decoded(row: tuple[object, ...]) -> tuple[object, ...]:
    """The row with its jsonb columns (read back as their text) parsed."""
    state, *jsonb, attempt, later = row
    parsed = [json.loads(value) if isinstance(value, str) else value for value in jsonb]
    return (state, *parsed, attempt, later)


def test_uuid_array_text_writes_each_id_as_its_hex_without_a_format_spec() -> None:
    """Two ids a job go through it on every flush of acks. Written as ``f"{id.int:032x}"``,
    each parsed its format spec: about 1,500 instructions an id (callgrind), where
    ``int.to_bytes(16).hex()`` takes about 20; the text is ``UUID.hex``'s, leading zeros and
    all, and reads back as the same ids."""
    ids = [uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID(int=2**128 - 1), uuid.uuid4()]
    text = uuid_array_text(ids)
    assert text == "{" + ",".join(i.hex for i in ids) + "}"
    opcodes = {ins.opname for ins in dis.get_instructions(uuid_array_text, show_caches=False)}
    assert "FORMAT_WITH_SPEC" not in opcodes, opcodes
    with connection.cursor() as cursor:
        cursor.execute("select %s::uuid[]", [text])
        assert cursor.fetchone()[0] == ids
