"""The side-by-side benchmark's pure parts: the table, its ratios, its place on the page, and the
worker commands (no timing is asserted anywhere)."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.peers import systems
from bench.peers.redis_run import END as REDIS_END
from bench.peers.redis_run import START as REDIS_START
from bench.peers.report import END, START, keep_section, ratio, splice, table

SYSTEMS = [("ours", "ours 1"), ("peer", "peer 2")]


def test_ratio_is_ours_over_the_peers_and_a_dash_without_both():
    assert ratio(300.0, 100.0) == "3.00x"
    assert ratio(1.0, 4.0) == "0.25x"
    assert ratio(None, 4.0) == "—"
    assert ratio(1.0, 0.0) == "—"


def test_table_has_a_row_per_system_then_a_ratio_row_per_peer():
    results = {
        "ours": {"enqueue_rate": 30_000.0, "drain_rate": 9_000.0, "wake_p50": 2.0},
        "peer": {"enqueue_rate": 15_000.0, "drain_rate": 3_000.0, "wake_p50": 4.0},
    }
    lines = table(SYSTEMS, results).splitlines()
    assert len(lines) == 5
    assert lines[2].startswith("| ours 1 | 30,000 | 9,000 | 2.00 ms | — |")
    assert lines[3].startswith("| peer 2 | 15,000 | 3,000 | 4.00 ms | — |")
    assert lines[4].startswith("| ours 1 / peer 2 | 2.00x | 3.00x | 0.50x | — |")


def test_splice_replaces_the_section_and_keeps_the_rest_of_the_page():
    page = "# Benchmarks\n\nfigures\n\n## How to read it\n\ntext\n"
    first = splice(page, f"{START}\nold\n{END}")
    assert first.index(START) < first.index("## How to read it")
    second = splice(first, f"{START}\nnew\n{END}")
    assert "old" not in second
    assert second.count(START) == 1
    assert second.replace(f"{START}\nnew\n{END}\n\n", "") == page


def test_a_regenerated_page_keeps_the_last_side_by_side_section():
    old = splice("# Benchmarks\n\n## How to read it\n", f"{START}\nmeasured\n{END}")
    new = "# Benchmarks\n\nnew figures\n\n## How to read it\n"
    kept = keep_section(old, new)
    assert "new figures" in kept
    assert f"{START}\nmeasured\n{END}" in kept
    assert keep_section("# no section\n", new) == new


def test_worker_commands_are_the_documented_ones_in_each_environment():
    root = Path("/project")
    ours = systems.ours("1.0", "db_ours")
    assert ours.command(root, ours.worker)[:4] == [sys.executable, "-m", "django", "jobs_worker"]
    assert ours.venv(root) is None
    pgq = systems.pgqueuer("1.6.0", "db_pgq")
    assert pgq.command(root, pgq.worker) == [
        "/project/.local/bench-venvs/pgqueuer-1.6.0/bin/pgq",
        "run",
        "bench.peers.pgqueuer_side:create_pgqueuer",
        "--batch-size",
        str(systems.PGQUEUER_BATCH),
    ]
    assert "pgqueuer==1.6.0" in pgq.packages
    pro = systems.procrastinate("3.10.0", "db_pro")
    assert pro.shown(pro.worker) == (
        "procrastinate --app=bench.peers.procrastinate_side.app worker "
        f"--concurrency {systems.CONCURRENCY}"
    )
    assert pro.command(root, pro.install)[0].endswith("procrastinate-3.10.0/bin/procrastinate")


def test_a_regenerated_page_keeps_the_redis_section_beside_the_postgres_one():
    old = splice("# Benchmarks\n\n## How to read it\n", f"{START}\npg\n{END}")
    old = splice(old, f"{REDIS_START}\nredis\n{REDIS_END}", REDIS_START, REDIS_END)
    new = "# Benchmarks\n\nnew figures\n\n## How to read it\n"
    only_pg = keep_section(old, new)
    assert REDIS_START not in only_pg
    kept = keep_section(old, only_pg, REDIS_START, REDIS_END)
    assert "new figures" in kept
    assert f"{START}\npg\n{END}" in kept
    assert f"{REDIS_START}\nredis\n{REDIS_END}" in kept
    assert kept.index(REDIS_START) < kept.index("## How to read it")
