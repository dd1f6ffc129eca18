"""A body that leaves its thread's database connection broken does not poison the next body
that runs on that thread: the worker checks the thread's connections after each body."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, connections

from tests.testapp.models import Effect
from tests.worker import bodies
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import Job
from ultimat3_jobs.runtime.common.pool import close_old_thread_connections


def test_a_broken_connection_does_not_reach_the_next_body(make_worker) -> None:
    bodies.BODY_THREADS.clear()
    ids = []
    for _ in range(6):
        ids.append(bodies.breaks_connection.using(priority=10).enqueue().id)
        ids.append(bodies.writes_effect.using(priority=0).enqueue().id)
    # One slot: the bodies run one after another on the pool's two threads, breakers first.
    make_worker(concurrency=1)
    wait_for(
        lambda: not Job.objects.filter(id__in=ids, state__in=["queued", "running"]).exists(),
        what="every job settled",
    )
    states = set(Job.objects.filter(id__in=ids).values_list("name", "state"))
    assert states == {
        ("tests.w.breaks_connection", "completed"),
        ("tests.w.writes_effect", "completed"),
    }
    # Each write committed: none ran inside a transaction a breaker left open.
    assert Effect.objects.filter(label="written").count() == 6
    broken = {ident for body, ident in bodies.BODY_THREADS if body == "breaks"}
    after_a_break = [
        ident
        for index, (body, ident) in enumerate(bodies.BODY_THREADS)
        if body == "writes" and ("breaks", ident) in bodies.BODY_THREADS[:index]
    ]
    assert broken and after_a_break, "no write ran on a thread a breaker had used"


def _on_a_new_thread(fn: Callable[[], object]) -> object:
    answer: list[object] = []
    thread = threading.Thread(target=lambda: answer.append(fn()))
    thread.start()
    thread.join(10)
    return answer[0]


def test_the_check_after_a_body_closes_what_that_thread_opened(transactional_db: None) -> None:
    """A thread that connected has its connection checked after each body (here: past its
    age, closed); one that never connected opens none by being checked."""

    def connect_then_check() -> object:
        connection.ensure_connection()
        connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
        close_old_thread_connections()
        closed = connection.connection is None
        connections.close_all()
        return closed

    def check_only() -> object:
        close_old_thread_connections()
        return connections.all(initialized_only=True)

    assert _on_a_new_thread(connect_then_check) is True
    assert _on_a_new_thread(check_only) == []
