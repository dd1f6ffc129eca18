"""consumer(): a batch and its cursor commit together, the cursor only moves forward, the handle
cannot enqueue its own consumer, and jobs it enqueues carry the origin stamp."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command

from tests.featureapp.models import FeedHandled, FeedRow
from ultimat3_jobs.consumers import declare, loop
from ultimat3_jobs.consumers.declare import consumer, consumer_named, registered_consumers
from ultimat3_jobs.errors import ConsumerInvalid, ConsumerSelfEnqueue, ConsumerUnknown
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import ConsumerCursor, Job

pytestmark = pytest.mark.django_db(transaction=True)


def _forget(name: str) -> None:
    declare._consumers.remove(name)
    for job_name in (f"consumer:{name}", f"consumer:{name}.supervisor"):
        if job_name in registry:
            registry.unregister(job_name)


@pytest.fixture
def declared() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        _forget(name)


def _record(items: list[FeedRow]) -> None:
    FeedHandled.objects.bulk_create(FeedHandled(row_id=row.id) for row in items)


def _turn(name: str) -> loop.Turn:
    spec = consumer_named(name)
    return loop.turn(name, spec.source, spec.handle, spec.batch_size, spec.origin)


def test_turns_handle_every_row_once_and_move_the_cursor_forward(declared: list[str]) -> None:
    declared.append("feed-a")
    consumer("feed-a", source=FeedRow.objects.all(), handle=_record, batch_size=10)
    rows = FeedRow.objects.bulk_create(FeedRow(payload=str(n)) for n in range(25))
    assert [_turn("feed-a").handled for _ in range(4)] == [10, 10, 5, 0]
    cursor = ConsumerCursor.objects.get(name="feed-a")
    assert (cursor.cursor, cursor.handled, cursor.turns) == (rows[-1].id, 25, 3)
    assert sorted(FeedHandled.objects.values_list("row_id", flat=True)) == [r.id for r in rows]
    state = consumer_named("feed-a").state()
    assert (state.cursor, state.lag, state.handled) == (rows[-1].id, 0, 25)
    FeedRow.objects.create(payload="late")
    assert consumer_named("feed-a").state().lag == 1


def test_a_failing_batch_leaves_neither_its_writes_nor_a_moved_cursor(declared: list[str]) -> None:
    declared.append("feed-b")

    def half_then_fail(items: list[FeedRow]) -> None:
        _record(items[:2])
        raise RuntimeError("handle failed")

    consumer("feed-b", source=FeedRow, handle=half_then_fail, batch_size=5)
    FeedRow.objects.bulk_create(FeedRow() for _ in range(5))
    with pytest.raises(RuntimeError):
        _turn("feed-b")
    assert FeedHandled.objects.count() == 0
    assert ConsumerCursor.objects.get(name="feed-b").cursor is None


def test_a_source_whose_cursor_goes_back_is_refused(declared: list[str]) -> None:
    declared.append("feed-c")

    def backwards(after: Any, limit: int) -> list[tuple[int, int]]:
        return [(5, 5), (3, 3)] if after is None else []

    consumer("feed-c", source=backwards, handle=lambda items: None)
    with pytest.raises(ConsumerInvalid, match="cursors must increase"):
        _turn("feed-c")
    assert ConsumerCursor.objects.get(name="feed-c").cursor is None
    assert consumer_named("feed-c").state().lag is None


def test_the_handle_cannot_enqueue_its_own_consumer(declared: list[str]) -> None:
    declared.append("feed-d")
    spec = consumer("feed-d", source=FeedRow, handle=lambda items: spec.start())
    FeedRow.objects.create()
    with pytest.raises(ConsumerSelfEnqueue, match="feed-d"):
        _turn("feed-d")
    assert not Job.objects.filter(name="consumer:feed-d").exists()
    assert ConsumerCursor.objects.get(name="feed-d").cursor is None


def test_jobs_the_handle_enqueues_carry_the_origin_and_exist_once_the_batch_commits(
    declared: list[str],
) -> None:
    declared.append("feed-e")
    echo = registry.get("tests.echo")
    consumer("feed-e", source=FeedRow, handle=lambda items: echo.enqueue(n=len(items)))
    FeedRow.objects.bulk_create(FeedRow() for _ in range(3))
    _turn("feed-e")
    (stamped,) = Job.objects.filter(name="tests.echo")
    assert (stamped.enqueued_by, stamped.input) == ("consumer:feed-e", {"n": 3})


def test_the_supervisor_keeps_one_run_live(declared: list[str]) -> None:
    declared.append("feed-f")
    spec = consumer("feed-f", source=FeedRow, handle=_record)
    ctx = JobContext.for_direct_call(spec.supervisor.name)
    assert spec.supervisor(ctx) == "created"
    assert spec.supervisor(ctx) == "deduped"
    assert Job.objects.filter(name="consumer:feed-f", state="queued").count() == 1
    assert spec.supervisor.definition.schedule is not None


def test_declarations_are_checked_and_listed(declared: list[str]) -> None:
    declared.append("feed-g")
    consumer("feed-g", source=FeedRow, handle=_record)
    assert "feed-g" in [c.name for c in registered_consumers()]
    with pytest.raises(ConsumerInvalid, match="already declared"):
        consumer("feed-g", source=FeedRow, handle=_record)
    with pytest.raises(ConsumerInvalid, match="batch_size"):
        consumer("feed-h", source=FeedRow, handle=_record, batch_size=0)
    with pytest.raises(ConsumerInvalid, match="name must match"):
        consumer("Feed H", source=FeedRow, handle=_record)
    with pytest.raises(ConsumerInvalid, match="source"):
        consumer("feed-h", source=42, handle=_record)
    with pytest.raises(ConsumerUnknown):
        consumer_named("feed-none")


def test_the_cli_lists_each_cursor_and_lag(declared: list[str]) -> None:
    declared.append("feed-i")
    consumer("feed-i", source=FeedRow, handle=_record, batch_size=2)
    FeedRow.objects.bulk_create(FeedRow() for _ in range(3))
    _turn("feed-i")
    out = io.StringIO()
    call_command("jobs", "consumers", "--json", stdout=out)
    (row,) = [c for c in json.loads(out.getvalue())["consumers"] if c["name"] == "feed-i"]
    assert (row["handled"], row["lag"], row["turns"]) == (2, 1, 1)
    out = io.StringIO()
    call_command("jobs", "consumers", stdout=out)
    assert "feed-i" in out.getvalue()
