"""One live job per idempotency key, under a race between connections: 16 threads enqueue the
same key while some of their transactions roll back."""

from __future__ import annotations

import random
import threading
import uuid

import pytest
from django.db import connection, transaction

from tests.testapp.jobs import echo
from ultimat3_jobs.models import Job

THREADS = 16
ROUNDS = 12


class Rollback(Exception):
    pass


def _enqueue(key: str, roll_back: bool, start: threading.Barrier, outcome: dict[int, str]) -> None:
    index = threading.get_ident()
    try:
        start.wait(timeout=30)
        with transaction.atomic():
            result = echo.using(idempotency_key=key).enqueue(thread=str(index))
            if roll_back:
                raise Rollback
        outcome[index] = f"committed:{result.status}:{result.id}"
    except Rollback:
        outcome[index] = "rolled back"
    except Exception as exc:
        outcome[index] = f"error:{exc!r}"
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_exactly_one_live_job_whenever_any_transaction_committed() -> None:
    rng = random.Random(20261129)
    for round_number in range(ROUNDS):
        key = f"race-{round_number}-{uuid.uuid4()}"
        # Every third round rolls everything back; the others roll back a random subset.
        rollbacks = (
            [True] * THREADS
            if round_number % 3 == 2
            else [rng.random() < 0.4 for _ in range(THREADS)]
        )
        start = threading.Barrier(THREADS)
        outcome: dict[int, str] = {}
        threads = [
            threading.Thread(target=_enqueue, args=(key, rollbacks[i], start, outcome))
            for i in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(outcome) == THREADS
        assert not [o for o in outcome.values() if o.startswith("error")], outcome
        committed = [o for o in outcome.values() if o.startswith("committed")]
        live = list(Job.objects.filter(idempotency_key=key, state__in=["queued", "running"]))
        assert len(live) == (1 if committed else 0), (round_number, outcome)
        # Every committed caller was answered with the one live job's id.
        assert {o.rsplit(":", 1)[1] for o in committed} <= {str(job.id) for job in live}
        assert sum(o.startswith("committed:created") for o in committed) == (1 if committed else 0)
