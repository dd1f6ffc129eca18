"""``scripts/database.py`` starts the embedded server with enough connections for ``.ci/run``.

A fresh cluster comes up with PostgreSQL's 100 connections; the script raises the setting and
restarts the server, and the URL it prints must reach the restarted server. (The library caches
its server object per data directory, so starting it again through the library after a stop
hands back the stopped object and leaves the server down: this test pins the restart.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "database.py"


def run_script(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_a_fresh_embedded_server_answers_with_the_raised_connection_limit() -> None:
    # Inside the repository's .local, whose parents the library already opened for its user.
    data = ROOT / ".local" / f"pgdata-script-check-{os.getpid()}"
    shutil.rmtree(data, ignore_errors=True)
    try:
        url = run_script("--data", str(data))
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute("show max_connections").fetchone()
        assert row is not None
        assert int(row[0]) >= 300
        # A second call finds the server running and prints the same URL.
        assert run_script("--data", str(data)) == url
    finally:
        subprocess.run([sys.executable, str(SCRIPT), "--data", str(data), "--stop"], check=False)
        shutil.rmtree(data, ignore_errors=True)
