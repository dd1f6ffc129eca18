"""Reference pages stay in step with the code: every error code, every setting."""

from __future__ import annotations

import re
from pathlib import Path

from ultimat3_jobs.conf import CHECK_CROSS_FIELD, CHECK_NOT_A_MAPPING, CHECK_UNKNOWN_KEY, SPEC
from ultimat3_jobs.errors import all_error_classes

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_errors_page_lists_every_code_exactly_once() -> None:
    page = (DOCS / "reference" / "errors.md").read_text()
    rows = re.findall(r"^\|\s*`(X_[A-Z_]+)`", page, re.MULTILINE)
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes)), "two classes share a code"
    assert sorted(rows) == sorted(codes)


def test_settings_page_lists_every_key_and_check_id() -> None:
    page = (DOCS / "reference" / "settings.md").read_text()
    for key, check_id, _ in SPEC:
        assert f"`{key}`" in page, key
        assert check_id.split(".")[1] in page, check_id
    for check_id in (CHECK_NOT_A_MAPPING, CHECK_UNKNOWN_KEY, CHECK_CROSS_FIELD):
        assert check_id.split(".")[1] in page, check_id
