"""What a claim and an ack cost inside Redis, counted in the commands their scripts run (the
"[<db> lua]" lines of MONITOR). Per job, a claim reads the job's hash once and writes it once,
and so does an ack (its lease field stays, read as null once the job is not running); every
index a batch of jobs touches is written in one command per key, and jobs due when enqueued are
never placed again. So the count per job stays flat, about two commands, however many jobs a
call takes."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable

import redis
from django.conf import settings

from tests.drivers.support import claim, request
from ultimat3_jobs.drivers.redis import RedisDriver, codec
from ultimat3_jobs.types import AckItem, ClaimedJob, JobState

JOBS = 200
PER_CALL = 100
BUDGET_PER_JOB = {"claim": 2.5, "ack": 2.5}


def script_lines(driver: RedisDriver, action: Callable[[], None]) -> list[list[str]]:
    """The commands scripts ran on the driver's database while ``action`` ran, each as its
    words (the command's name, then its arguments)."""
    db = int(driver.redis().connection_pool.connection_kwargs.get("db", 0))
    mark = f"end-of-count-{uuid.uuid4().hex}"
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=30)
    lines: list[list[str]] = []
    try:
        with client.monitor() as monitor:
            action()
            driver.redis().echo(mark)
            for line in monitor.listen():
                if line["db"] != db:
                    continue
                if mark in line["command"]:
                    break
                if line["client_type"] == "lua":
                    lines.append(line["command"].split(" "))
    finally:
        client.close()
    return lines


def script_commands(
    driver: RedisDriver, action: Callable[[], None], *, by_key: bool = False
) -> Counter[str]:
    """The commands scripts ran while ``action`` ran, by name (with ``by_key``: by name and the
    kind of key, the part of its name after the store's base key up to the next colon, such as
    ``ZREM delayed``)."""
    counts: Counter[str] = Counter()
    for words in script_lines(driver, action):
        name = words[0].upper()
        if by_key and len(words) > 1 and words[1].startswith(driver.prefix + ":"):
            name += " " + words[1][len(driver.prefix) + 1 :].split(":", 1)[0]
        counts[name] += 1
    return counts


def test_a_claim_and_an_ack_run_a_few_commands_per_job(redis_store: RedisDriver):
    redis_store.job_enqueue_many(requests=[request() for _ in range(JOBS)])
    claimed: list[ClaimedJob] = []

    def claim_all() -> None:
        for _ in range(JOBS // PER_CALL):
            claimed.extend(claim(redis_store, limit=PER_CALL))

    def ack_all() -> None:
        for start in range(0, JOBS, PER_CALL):
            items = [
                AckItem(job_id=job.id, claim_token=job.claim_token, result_json="null")
                for job in claimed[start : start + PER_CALL]
            ]
            assert len(redis_store.job_ack_many(items=items)) == len(items)

    costs = {"claim": script_commands(redis_store, claim_all)}
    assert len(claimed) == JOBS
    costs["ack"] = script_commands(redis_store, ack_all)
    for what, counts in costs.items():
        per_job = sum(counts.values()) / JOBS
        print(f"{what}: {per_job:g} commands per job inside the scripts: {dict(counts)}")
        assert per_job <= BUDGET_PER_JOB[what], (what, dict(counts))


def test_a_claim_writes_only_the_sets_its_jobs_leave_and_enter(redis_store: RedisDriver):
    """The jobs a claim takes were in their queue's ready set, so neither its delayed set nor
    a held set of a paused name holds them: the claim removes them from ready and queued,
    adds them to running, and writes no other index."""
    redis_store.job_enqueue_many(requests=[request() for _ in range(PER_CALL)])
    counts = script_commands(redis_store, lambda: claim(redis_store, limit=PER_CALL), by_key=True)
    written = {name for name in counts if name.split(" ", 1)[0] in ("ZADD", "ZREM", "SADD", "SREM")}
    assert written == {"ZREM queued", "ZREM ready", "ZADD running", "ZREM idle"}, dict(counts)


def test_a_claim_and_an_ack_read_only_the_job_fields_they_use(redis_store: RedisDriver):
    """Each job's hash is read once per claim and once per ack, and only for the fields the
    script uses: the claim's answer and lease (8), the ack's fence and the indexes its job
    enters (5). A field read costs Redis a walk of the hash, so the count is per job."""
    redis_store.job_enqueue_many(requests=[request() for _ in range(PER_CALL)])
    claimed: list[ClaimedJob] = []
    lines = {
        "claim": script_lines(
            redis_store, lambda: claimed.extend(claim(redis_store, limit=PER_CALL))
        )
    }
    items = [AckItem(job_id=job.id, claim_token=job.claim_token) for job in claimed]
    lines["ack"] = script_lines(redis_store, lambda: redis_store.job_ack_many(items=items))
    read = {
        what: sum(len(words) - 2 for words in found if words[0].upper() == "HMGET") / PER_CALL
        for what, found in lines.items()
    }
    assert len(claimed) == PER_CALL
    assert read == {"claim": 8, "ack": 5}, read


def test_a_claim_on_one_queue_reads_its_ready_set_without_scores(redis_store: RedisDriver):
    """A ready set's scores only order the heads of several queues against each other; on one
    queue its order is the claim order, so the claim asks for no scores (Redis would format
    each as a 17-digit double for the script to parse back). Two queues still read them."""
    redis_store.job_enqueue_many(requests=[request() for _ in range(PER_CALL)])
    redis_store.job_enqueue_many(requests=[request(queue="other") for _ in range(PER_CALL)])

    def ready_reads(queues: tuple[str, ...]) -> list[list[str]]:
        lines = script_lines(redis_store, lambda: claim(redis_store, queues, limit=10))
        return [words for words in lines if words[0].upper() == "ZRANGE"]

    one, two = ready_reads(("default",)), ready_reads(("default", "other"))
    assert one and not any("WITHSCORES" in (w.upper() for w in words) for words in one), one
    assert len(two) == 2 and all(words[-1].upper() == "WITHSCORES" for words in two), two


def test_a_claim_answers_only_the_claimed_jobs_fields(redis_store: RedisDriver):
    """A claim's answer row is the worker's ``ClaimedJob``, field for field: no lease end or
    enqueue time that Redis would format and send, and the client skip, for every job."""
    redis_store.job_enqueue_many(requests=[request() for _ in range(3)])
    args = ["w1", "30.0", "3", "1", "default", "ab" * 48]
    rows = redis_store._run("job_claim", args)
    assert [len(row) for row in rows] == [len(codec.CLAIMED_FIELDS)] * 3, rows


def test_an_acked_job_reads_without_a_lease(redis_store: RedisDriver):
    """The ack leaves the lease field in the job's hash (one command less per job); a job read
    back has a lease only while it runs, as on PostgreSQL."""
    redis_store.job_enqueue_many(requests=[request()])
    (job,) = claim(redis_store, limit=1)
    assert redis_store.job_get(job_id=job.id).lease_expires_at is not None  # type: ignore[union-attr]
    redis_store.job_ack_many(items=[AckItem(job_id=job.id, claim_token=job.claim_token)])
    assert redis_store.redis().hexists(f"{redis_store.prefix}:job:{job.id}", "lease_expires_at")
    record = redis_store.job_get(job_id=job.id)
    assert record is not None and record.state is JobState.COMPLETED
    assert record.lease_expires_at is None
