"""An import under SIGKILL, with real ``jobs_worker`` processes: a JSONL file holding 3 malformed
records is imported while the worker running it is killed in the middle of a page, and replaced.
Every good record is handled (at least once), the 3 refused records are reported by row, field
and rule without their values, and each page started at the byte offset the page before it
stored: the first byte of a record. The default file is 2 MB (``ULTIMAT3_IMPORT_KILL_MB``);
``-m slow`` imports 50 MB (``ULTIMAT3_IMPORT_KILL_MB_SLOW`` overrides it)."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import time
import uuid
from pathlib import Path

import pytest

from tests.process.audit import enqueue, settled
from tests.process.conftest import Workers
from tests.processapp.jobs import IMPORT, IMPORT_JOB_ID
from tests.testapp.models import Effect
from ultimat3_jobs.models import Job, JobStep

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

RECORD_PAD = 400
SECRET = "secret-value-never-reported"


def _write_file(path: Path, megabytes: float) -> tuple[bytes, set[int], list[int]]:
    """Records ``{"n": i, "pad": ...}`` one per line up to ``megabytes``; three of them (at a
    tenth, a half and nine tenths) malformed, each a different way and each holding
    :data:`SECRET`. Answers the file's bytes, the good records' numbers and the bad rows."""
    target = int(megabytes * 2**20)
    per_record = len(json.dumps({"n": 0, "pad": "x" * RECORD_PAD})) + 1
    count = max(30, target // per_record)
    bad = {count // 10: "json", count // 2: "type", (count * 9) // 10: "object"}
    lines, good = [], set()
    for n in range(count):
        kind = bad.get(n)
        if kind == "json":
            lines.append(f'{{"n": {n}, "pad": "{SECRET}')
        elif kind == "type":
            lines.append(json.dumps({"n": SECRET, "pad": "x" * RECORD_PAD}))
        elif kind == "object":
            lines.append(json.dumps([n, SECRET]))
        else:
            lines.append(json.dumps({"n": n, "pad": "x" * RECORD_PAD}))
            good.add(n)
    body = ("\n".join(lines) + "\n").encode()
    path.write_bytes(body)
    return body, good, sorted(n + 1 for n in bad)  # rows are counted from 1


def _pages(job_id: uuid.UUID) -> list[tuple[int, dict]]:
    found = JobStep.objects.filter(job_id=job_id, name__startswith="page:")
    return sorted(
        (int(name.split(":")[1]), output) for name, output in found.values_list("name", "output")
    )


def _import_with_kills(
    workers: Workers, monkeypatch, tmp_path: Path, *, megabytes: float, page_bytes: int, kills: int
) -> None:
    folder = tmp_path / "import"
    folder.mkdir()
    body, good, bad_rows = _write_file(folder / "in.jsonl", megabytes)
    monkeypatch.setenv("ULTIMAT3_IMPORT_DIR", str(folder))
    monkeypatch.setenv("ULTIMAT3_IMPORT_PAGE_BYTES", str(page_bytes))
    rng = random.Random(16)
    [job_id] = enqueue(IMPORT, [{}], max_attempts=50)
    started = 0
    worker = workers.start(f"import-{started}", concurrency=1)
    done_kills = 0
    while done_kills < kills and not settled([job_id]):
        before = len(_pages(job_id))
        workers.wait(
            lambda before=before: len(_pages(job_id)) > before or settled([job_id]),
            timeout=120,
            what="the import stored another page",
        )
        if settled([job_id]):
            break
        # A page takes at least ULTIMAT3_IMPORT_PAUSE (0.2 s) in its handle: the kill falls
        # inside the next page, before or after its records were written.
        time.sleep(rng.uniform(0.02, 0.15))
        worker.kill()
        worker.expect_exit(-signal.SIGKILL)
        done_kills += 1
        started += 1
        worker = workers.start(f"import-{started}", concurrency=1)
    workers.wait(lambda: settled([job_id]), timeout=600, what="the import settled")
    workers.wait_registered(worker, timeout=60)  # a SIGTERM mid-start would end it with -15
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, workers.report()

    job = Job.objects.get(id=job_id)
    assert job.state == "completed", (job.errors, workers.report())
    result = job.result
    # The three refused records, by row, field and rule; never a value.
    assert [error["row"] for error in result["errors"]] == bad_rows
    assert [(e["field"], e["rule"]) for e in result["errors"]] == [
        ("", "not JSON"),
        ("n", "must be an integer"),
        ("", "not a JSON object"),
    ]
    assert result["refused"] == 3
    assert SECRET not in json.dumps(result) and SECRET not in json.dumps(job.errors or [])
    assert (result["rows"], result["handled"]) == (len(good) + 3, len(good))
    # Every good record handled at least once; a replayed page at most once per kill.
    labels = list(Effect.objects.filter(job_id=IMPORT_JOB_ID).values_list("label", flat=True))
    assert {int(label) for label in labels} == good, "a good record was never handled"
    pages = _pages(job_id)
    assert [n for n, _ in pages] == list(range(len(pages)))
    biggest_page = max(output["rows"] for _, output in pages)
    again = len(labels) - len(good)
    # Each page resumed at the byte the one before stored: the first byte of a record.
    offsets = [output["offset"] for _, output in pages]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert offsets[-1] == len(body)
    assert all(body[offset - 1 : offset] == b"\n" for offset in offsets)
    assert sum(output["rows"] for _, output in pages) == len(good) + 3
    for (_, previous), (_, page) in itertools.pairwise(pages):
        records = body[previous["offset"] : page["offset"]].count(b"\n")
        assert records == page["rows"], "a page did not start where the one before ended"
    print(f"\n[import/sigkill] {done_kills} kills, {megabytes} MB, {again} records re-handled")
    assert done_kills >= min(kills, 2), "the import ended before the kills could test anything"
    assert again <= done_kills * biggest_page, "more than one page re-handled per kill"


def test_an_import_with_3_malformed_records_survives_kills_mid_page(
    workers: Workers, monkeypatch, tmp_path: Path
) -> None:
    megabytes = float(os.environ.get("ULTIMAT3_IMPORT_KILL_MB", "2"))
    _import_with_kills(
        workers, monkeypatch, tmp_path, megabytes=megabytes, page_bytes=64 * 2**10, kills=3
    )


@pytest.mark.slow
def test_a_50_mb_import_survives_kills_mid_page(
    workers: Workers, monkeypatch, tmp_path: Path
) -> None:
    megabytes = float(os.environ.get("ULTIMAT3_IMPORT_KILL_MB_SLOW", "50"))
    monkeypatch.setenv("ULTIMAT3_IMPORT_PAUSE", "0.05")
    _import_with_kills(
        workers, monkeypatch, tmp_path, megabytes=megabytes, page_bytes=2**20, kills=3
    )
