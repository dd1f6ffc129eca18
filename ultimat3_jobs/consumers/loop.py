"""One consumer's turns: lock its cursor row, read the next batch after the cursor, handle it and
move the cursor, all in ONE transaction, so a batch and its cursor commit together or not at
all. A worker lost mid-turn leaves the cursor where it was and nothing of the batch's writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import router, transaction
from django.utils import timezone

from ultimat3_jobs.consumers.source import Cursor, Source
from ultimat3_jobs.consumers.tables import ConsumerCursor
from ultimat3_jobs.errors import ConsumerInvalid
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.origin import Origin, enqueuing_from

Handle = Callable[[list[Any]], Any]


@dataclass(frozen=True, slots=True)
class Turn:
    """What one turn did: how many items it handled and where the cursor went."""

    handled: int
    before: Cursor | None
    after: Cursor | None


def database() -> str:
    return router.db_for_write(ConsumerCursor)


def turn(name: str, source: Source, handle: Handle, batch_size: int, origin: Origin) -> Turn:
    """Handle the next batch of consumer ``name`` (none when the source has nothing after the
    cursor). The cursor row is locked for the turn: two runs of one consumer take turns."""
    using = database()
    ConsumerCursor.objects.using(using).get_or_create(name=name)
    with transaction.atomic(using=using):
        row = ConsumerCursor.objects.using(using).select_for_update().get(name=name)
        batch = list(source.read(row.cursor, batch_size))
        if not batch:
            return Turn(0, row.cursor, row.cursor)
        cursor = _checked_cursor(name, row.cursor, batch)
        with enqueuing_from(origin):
            handle([item for _, item in batch])
        ConsumerCursor.objects.using(using).filter(name=name).update(
            cursor=cursor,
            handled=row.handled + len(batch),
            turns=row.turns + 1,
            moved_at=timezone.now(),
        )
    return Turn(len(batch), row.cursor, cursor)


def _checked_cursor(
    name: str, before: Cursor | None, batch: Sequence[tuple[Cursor, Any]]
) -> Cursor:
    """The batch's last cursor, once every cursor of the batch is JSON text or an integer and
    each is after the one before it: the cursor only moves forward."""
    previous = before
    for cursor, _ in batch:
        if isinstance(cursor, bool) or not isinstance(cursor, (int, str)):
            raise ConsumerInvalid(
                f"consumer {name!r}: its source answered the cursor {cursor!r:.80}; a cursor is "
                "an integer or a string",
                field="source",
            )
        if previous is not None and (
            type(previous) is not type(cursor) or not previous < cursor  # type: ignore[operator]
        ):
            raise ConsumerInvalid(
                f"consumer {name!r}: its source answered the cursor {cursor!r:.80} after "
                f"{previous!r:.80}; cursors must increase",
                field="source",
            )
        previous = cursor
    return batch[-1][0]


def run(
    ctx: JobContext,
    name: str,
    source: Source,
    handle: Handle,
    *,
    batch_size: int,
    origin: Origin,
    run_seconds: float,
    idle_seconds: float,
) -> dict[str, Any]:
    """Take turns until ``run_seconds`` pass or the attempt is cancelled, waiting
    ``idle_seconds`` whenever the source has nothing new; the supervisor starts the next run."""
    deadline = time.monotonic() + run_seconds
    handled = turns = 0
    cursor: Cursor | None = None
    while not ctx.cancelled.is_set() and time.monotonic() < deadline:
        done = turn(name, source, handle, batch_size, origin)
        cursor = done.after
        if done.handled:
            handled += done.handled
            turns += 1
        else:
            ctx.cancelled.wait(min(idle_seconds, max(0.0, deadline - time.monotonic())))
    return {"consumer": name, "handled": handled, "turns": turns, "cursor": cursor}
