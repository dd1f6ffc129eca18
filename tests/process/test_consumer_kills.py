"""A consumer under SIGKILL, with real ``jobs_worker`` processes (each running a scheduler, so the
consumer's supervisor restarts its runs): N source rows, the worker running the consumer killed
again and again. Every row is handled exactly once, the committed cursor only moves forward, and
no batch is handled again once its cursor committed (each batch's rows and turn are written in
the transaction that moves the cursor). The default run uses 1,000 rows
(``ULTIMAT3_CONSUMER_KILL_ROWS`` overrides it); ``-m slow`` 10,000
(``ULTIMAT3_CONSUMER_KILL_ROWS_SLOW`` overrides it).
"""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from tests.featureapp.models import FeedHandled, FeedRow, FeedTurn
from tests.process.conftest import WorkerProcess, Workers, descendants
from tests.processapp.jobs import FEED
from ultimat3_jobs.models import ConsumerCursor

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def _cursor() -> int | None:
    row = ConsumerCursor.objects.filter(name=FEED).first()
    return None if row is None else row.cursor


def _consume_under_kills(workers: Workers, rows: int, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    FeedRow.objects.bulk_create(FeedRow(payload=str(n)) for n in range(rows))
    last = FeedRow.objects.order_by("-id").values_list("id", flat=True)[0]
    live = [workers.start(f"feed-{n}", extra=("--with-scheduler",)) for n in range(2)]
    workers.wait_registered(*live)
    started, landed, seen = len(live), 0, [None]

    def watch(seconds: float) -> None:
        until = time.monotonic() + seconds
        while True:
            cursor = _cursor()
            if cursor is not None:
                assert seen[-1] is None or cursor >= seen[-1], f"cursor went back: {seen[-5:]}"
                if cursor != seen[-1]:
                    seen.append(cursor)
            if time.monotonic() >= until:
                return
            time.sleep(0.05)

    def runner(pid: int | None) -> WorkerProcess | None:
        """The live worker whose process (or a process under it) handled a turn."""
        return next((p for p in live if pid in (p.pid, *descendants(p.pid))), None)

    workers.wait(lambda: _cursor() is not None, timeout=60, what="the consumer's first turn")
    for _ in range(kills):
        # Each kill waits for a turn after the last one, made by a live worker, and kills that
        # worker a moment later: every kill lands on the process running the consumer.
        mark = FeedTurn.objects.order_by("-id").values_list("id", flat=True).first()

        def moved(mark: int | None = mark) -> WorkerProcess | None:
            watch(0)
            latest = FeedTurn.objects.order_by("-id").values_list("id", "pid").first()
            if latest is None or latest[0] == mark or _cursor() == last:
                return None
            return runner(latest[1])

        victim = workers.wait(
            lambda: moved() or _cursor() == last, timeout=120, what="a turn by a live worker"
        )
        if _cursor() == last:
            break
        watch(rng.uniform(0.0, 0.3))
        victim.kill()
        victim.expect_exit(-signal.SIGKILL)
        landed += 1
        live.remove(victim)
        replacement = workers.start(f"feed-{started}", extra=("--with-scheduler",))
        started += 1
        workers.wait_registered(replacement)
        live.append(replacement)
    deadline = time.monotonic() + 240
    while _cursor() != last and time.monotonic() < deadline:
        watch(0.5)
    assert _cursor() == last, workers.report()
    for process in live:
        process.signal(signal.SIGTERM)
        assert process.wait(60) == 0, workers.report()

    handled = list(FeedHandled.objects.values_list("row_id", flat=True))
    assert len(handled) == rows, f"{len(handled)} items handled for {rows} rows"
    assert sorted(handled) == list(FeedRow.objects.order_by("id").values_list("id", flat=True))
    turns = list(FeedTurn.objects.order_by("id").values_list("before", "after"))
    previous = None
    for before, after in turns:
        assert before == previous, f"a turn started at {before}, not at {previous}"
        assert after > (before or 0)
        previous = after
    assert previous == last
    state = ConsumerCursor.objects.get(name=FEED)
    assert (state.handled, state.turns) == (rows, len(turns))
    pids = set(FeedTurn.objects.values_list("pid", flat=True))
    print(f"\n[consumer/sigkill] {landed} kills, {rows} rows, {len(turns)} turns, {len(pids)} pids")
    assert landed == kills, "the consumer finished before every kill landed"
    assert len(pids) >= 2, "no kill moved the consumer to another process"


def test_a_consumer_killed_again_and_again_handles_every_row_once(
    workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = int(os.environ.get("ULTIMAT3_CONSUMER_KILL_ROWS", "1000"))
    # Batches of 10 (100 turns of 0.1 s at least): on a quiet machine, batches of 50 let the
    # surviving worker finish the 1,000 rows before the fifth kill.
    monkeypatch.setenv("ULTIMAT3_FEED_BATCH", "10")
    _consume_under_kills(workers, rows=rows, kills=5, seed=17)


@pytest.mark.slow
def test_a_consumer_of_10000_rows_killed_5_times(workers: Workers) -> None:
    rows = int(os.environ.get("ULTIMAT3_CONSUMER_KILL_ROWS_SLOW", "10000"))
    _consume_under_kills(workers, rows=rows, kills=5, seed=2027)
