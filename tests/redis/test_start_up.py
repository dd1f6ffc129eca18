"""What importing the Redis driver costs a process's start (the drain times two fresh workers):
its scripts are read when first called, not at import (a worker runs about a dozen of the
sixty; reading and hashing them all, each behind the shared prelude, was some 31 million
instructions), and it imports no other driver (the jsonb rules it shares with the memory driver
live apart from that driver)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
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


def test_importing_the_redis_driver_imports_no_other_driver():
    code = (
        "import sys, ultimat3_jobs.drivers.redis; "
        "print(sorted(m for m in sys.modules if m.startswith(('ultimat3_jobs.drivers.memory', "
        "'ultimat3_jobs.drivers.postgres'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
