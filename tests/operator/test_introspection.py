"""``queues_overview`` reads the store's whole pause list: only a queue-scope pause pauses a
queue, however its target is spelled."""

from __future__ import annotations

from datetime import UTC, datetime

from ultimat3_jobs.operator.introspection import queues_overview
from ultimat3_jobs.types import JobState, Pause, PauseScope, QueueStats

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pause(scope: PauseScope, target: str) -> Pause:
    return Pause(scope=scope, target=target, paused_by="", reason="", created_at=NOW)


def test_only_a_queue_pause_pauses_a_queue() -> None:
    stats = [
        QueueStats(queue="default", state=JobState.QUEUED, jobs=2),
        QueueStats(queue="math", state=JobState.QUEUED, jobs=1),
    ]
    # A job name and a cron spelled as a queue: neither pauses it. "idle" holds no job and
    # is listed because it is paused.
    pauses = [pause("job", "default"), pause("task", "default"), pause("queue", "idle")]
    pauses.append(pause("queue", "math"))

    found = {row["queue"]: row for row in queues_overview(stats, pauses)}

    assert list(found) == ["default", "idle", "math"]
    assert {queue: row["paused"] for queue, row in found.items()} == {
        "default": False,
        "idle": True,
        "math": True,
    }
    assert found["idle"]["depth"] == dict.fromkeys([state.value for state in JobState], 0)
