"""The memory driver's claim heaps: which queued rows are due, in claim order.

Every queued row has exactly one valid entry: in its queue's delayed heap (by run_at) until
a claim or demand read finds it due, then in the ready heap of its (queue, job name), in
claim order. Entries of rows that left the queue or moved are left behind and skipped when
they surface (``_stale`` counts them; ``_maybe_compact`` rebuilds when they pile up).
``_ready_count`` is the number of valid ready entries per queue: the demand.
"""

from __future__ import annotations

import heapq
import uuid
from datetime import datetime

from ultimat3_jobs.drivers.memory.rows import _COMPACT_MIN_STALE, _DelayedEntry, _ReadyEntry, _Row
from ultimat3_jobs.types import JobState


class ClaimHeaps:
    """The claim heaps of :class:`~ultimat3_jobs.drivers.memory.MemoryDriver`; the state they
    keep is set up by :class:`~ultimat3_jobs.drivers.memory.state.MemoryState`."""

    _rows: dict[uuid.UUID, _Row]
    _delayed: dict[str, list[_DelayedEntry]]
    _ready: dict[tuple[str, str], list[_ReadyEntry]]
    _ready_names: dict[str, set[str]]
    _ready_count: dict[str, int]
    _promoted_at: dict[str, datetime]
    _stale: int

    def _push(self, row: _Row) -> None:
        row.version += 1
        row.ready = False
        heap = self._delayed.setdefault(row.queue, [])
        heapq.heappush(heap, (row.run_at, row.seq, row.version, row.id))

    def _drop_entry(self, row: _Row, *, popped: bool) -> None:
        if row.ready:
            self._ready_count[row.queue] -= 1
            row.ready = False
        if not popped:
            self._stale += 1
        row.version += 1

    def _valid(self, entry_id: uuid.UUID, version: int) -> _Row | None:
        row = self._rows.get(entry_id)
        if row is None or row.state is not JobState.QUEUED or row.version != version:
            return None
        return row

    def _promote(self, queue: str, now: datetime) -> None:
        """Move the queue's rows due at ``now`` into its ready heaps, so that they hold exactly
        the queued rows with ``run_at <= now``."""
        promoted_at = self._promoted_at.get(queue)
        if promoted_at is not None and now < promoted_at:
            self._demote(queue, now)
        self._promoted_at[queue] = now
        delayed = self._delayed.get(queue)
        while delayed and delayed[0][0] <= now:
            run_at, seq, version, entry_id = heapq.heappop(delayed)
            row = self._valid(entry_id, version)
            if row is None:
                self._stale -= 1
                continue
            heap = self._ready.setdefault((queue, row.name), [])
            heapq.heappush(heap, (-row.priority, run_at, seq, version, entry_id))
            self._ready_names.setdefault(queue, set()).add(row.name)
            self._ready_count[queue] = self._ready_count.get(queue, 0) + 1
            row.ready = True
        if delayed is not None and not delayed:
            del self._delayed[queue]

    def _demote(self, queue: str, now: datetime) -> None:
        # The clock stepped back: rows promoted since are no longer due. Rare, so a full pass
        # over the queue's ready heaps is fine.
        delayed = self._delayed.setdefault(queue, [])
        for job_name in list(self._ready_names.get(queue, ())):
            kept: list[_ReadyEntry] = []
            for entry in self._ready[(queue, job_name)]:
                row = self._valid(entry[4], entry[3])
                if row is None:
                    self._stale -= 1
                elif entry[1] > now:
                    self._ready_count[queue] -= 1
                    row.ready = False
                    heapq.heappush(delayed, (entry[1], entry[2], entry[3], entry[4]))
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._ready[(queue, job_name)] = kept
            self._top(queue, job_name)

    def _top(self, queue: str, job_name: str) -> _ReadyEntry | None:
        """The first valid entry of a ready heap, dropping stale ones on the way; an emptied
        heap is forgotten."""
        heap = self._ready.get((queue, job_name))
        while heap:
            entry = heap[0]
            if self._valid(entry[4], entry[3]) is not None:
                return entry
            heapq.heappop(heap)
            self._stale -= 1
        if heap is not None:
            del self._ready[(queue, job_name)]
            self._ready_names[queue].discard(job_name)
            if not self._ready_names[queue]:
                del self._ready_names[queue]
        return None

    def _clear_heaps(self) -> None:
        """Empty the claim heaps and their bookkeeping (a compaction, a reset)."""
        self._delayed.clear()
        self._ready.clear()
        self._ready_names.clear()
        self._ready_count.clear()
        self._promoted_at.clear()
        self._stale = 0

    def _maybe_compact(self) -> None:
        if self._stale <= max(_COMPACT_MIN_STALE, len(self._rows)):
            return
        self._clear_heaps()
        for row in self._rows.values():
            if row.state is JobState.QUEUED:
                self._push(row)
