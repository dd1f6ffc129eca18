"""The documentation site builds with ``mkdocs build --strict``: every page is in the nav, every
link and anchor resolves, and the API reference renders from the public names' docstrings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs", reason="the docs tools are in the test dependency group")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    # Rendered from docstrings, not written by hand in the page.
    assert "Declare a job." in api  # the first line of `job`'s docstring
    assert "JobContext" in api


def _copy_project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copytree(ROOT / "ultimat3_jobs", copy / "ultimat3_jobs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    return copy


def test_a_broken_link_or_a_page_missing_from_the_nav_fails_the_build(tmp_path: Path) -> None:
    copy = _copy_project(tmp_path)
    (copy / "docs" / "orphan.md").write_text("# Not in the nav\n")
    result = build(copy / "mkdocs.yml", tmp_path / "site-orphan")
    assert result.returncode != 0
    assert "orphan.md" in result.stdout + result.stderr

    (copy / "docs" / "orphan.md").unlink()
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [nowhere](guides/no-such-page.md).\n")
    result = build(copy / "mkdocs.yml", tmp_path / "site-broken")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr
