"""The driver's scripts are read when first called, not when the driver's modules are imported:
a worker runs about a dozen of the sixty, and reading and hashing them all, each behind the
shared prelude, was some 35 million instructions of every process's start."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ultimat3_jobs.drivers.redis.scripts import LUA_DIR, PRELUDE, Scripts


def test_no_script_is_read_before_its_first_call(monkeypatch: pytest.MonkeyPatch):
    read: list[str] = []
    original = Path.read_text

    def counted(self: Path, *args: object, **kwargs: object) -> str:
        read.append(self.name)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counted)
    scripts = Scripts()
    assert read == []
    sha = scripts.sha("job_claim")
    assert sorted(read) == [f"{PRELUDE}.lua", "job_claim.lua"]
    assert scripts.sha("job_claim") == sha and len(read) == 2


def test_a_script_is_its_prelude_and_its_own_text_by_sha():
    prelude = (LUA_DIR / f"{PRELUDE}.lua").read_text(encoding="utf-8")
    own = (LUA_DIR / "job_claim.lua").read_text(encoding="utf-8")
    sha = Scripts().sha("job_claim")
    assert sha == hashlib.sha1(f"{prelude}\n{own}".encode()).hexdigest()


@pytest.mark.parametrize("name", ["no_such_script", PRELUDE])
def test_a_name_without_a_script_is_refused(name: str):
    with pytest.raises(KeyError):
        Scripts().sha(name)
