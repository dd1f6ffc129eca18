"""What the benchmark's scripts share: progress lines, the machine's facts and counters, and
worker subprocesses in process groups of their own."""

from __future__ import annotations

import compileall
import contextlib
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = "bench.settings"
STOP_SECONDS = 30.0


class BenchError(RuntimeError):
    """The run cannot go on (a worker died, a wait timed out, a count came out wrong)."""


COMPILED_SOURCES = {
    "ultimat3_jobs": None,
    "bench": None,
    "tests": 0,
    "tests/testapp": None,
    "tests/featureapp": None,
    "example_project": None,
}
"""What a worker of the benchmark imports from the tree, and how deep (None: all the way): the
settings' apps and the database URL's parser (``example_project.dburl``) included."""


def compile_sources() -> None:
    """Byte-compile the project's own sources (``__pycache__``, ignored by git) before workers
    are timed: a peer's packages were compiled when pip installed them, while the project runs
    from its source tree, where an interpreter started with ``PYTHONDONTWRITEBYTECODE`` would
    compile about 200 modules again at each worker's start (measured: 0.4 s of a 1.1 s start)."""
    for name, depth in COMPILED_SOURCES.items():
        if not compileall.compile_dir(ROOT / name, maxlevels=depth, quiet=1):
            raise BenchError(f"byte-compiling {name}/ failed")


STARTED = time.perf_counter()
"""When the benchmark process started; ``say`` stamps its lines from here."""


def say(message: str) -> None:
    print(f"[{time.perf_counter() - STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


# -- the machine --------------------------------------------------------------------------------


def cpu_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from ``/proc/stat``."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return (total - idle) / ticks, total / ticks


def wait_until_idle(*, busy_below: float = 0.2, window: float = 1.0, limit: float = 30.0) -> float:
    """Wait until the whole machine's CPUs were busy under ``busy_below`` of one ``window``
    (or ``limit`` seconds passed); answers the seconds waited. What a phase leaves running (a
    worker still exiting, the server writing back what a large phase dirtied) then no longer
    runs into the next phase's figures."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        busy, total = cpu_busy_seconds()
        time.sleep(window)
        busy_after, total_after = cpu_busy_seconds()
        if total_after > total and (busy_after - busy) / (total_after - total) < busy_below:
            break
    return time.monotonic() - started


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of one live process, from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat") as stat:
        text = stat.read()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """CPU seconds of every waited-for descendant of this process (subprocesses, theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def proc_status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as status:
        return {
            key: value.strip() for key, _, value in (line.partition(":") for line in status) if key
        }


def kib_to_mib(text: str) -> float:
    return int(text.split()[0]) / 1024


def load_average() -> str:
    """The 1-minute load average, where ``/proc`` tells it."""
    try:
        with open("/proc/loadavg") as loadavg:
            return loadavg.read().split()[0]
    except OSError:
        return "?"


def machine_facts() -> dict[str, str]:
    facts = {"cores": str(os.cpu_count())}
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    facts["memory"] = f"{kib_to_mib(line.split(':')[1]) / 1024:.1f} GiB"
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    facts["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/loadavg") as loadavg:
            facts["load"] = " ".join(loadavg.read().split()[:3])
    except OSError:
        pass
    facts["os"] = f"{platform.system()} {platform.release()}"
    facts["python"] = platform.python_version()
    import django

    facts["django"] = django.get_version()
    facts["psycopg"] = psycopg.__version__
    facts["libpq"] = str(psycopg.pq.version())
    return facts


# -- worker subprocesses ------------------------------------------------------------------------


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["DJANGO_SETTINGS_MODULE"] = SETTINGS
    return env


class WorkerProcess:
    """One worker command in a process group of its own, its output in a log file."""

    def __init__(
        self, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 (closed in stop())
        self.started = time.perf_counter()
        self.popen = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=subprocess_env() if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def wait_for_log(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log_path.read_text(errors="replace"):
                return
            if self.popen.poll() is not None:
                raise BenchError(
                    f"the worker exited {self.popen.returncode} before logging {needle!r}:\n"
                    + self.log_tail()
                )
            time.sleep(0.05)
        raise BenchError(f"the worker did not log {needle!r} within {timeout:g} s")

    def wait(self, timeout: float) -> int:
        try:
            code = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BenchError(f"the worker did not exit within {timeout:g} s") from None
        if code != 0:
            raise BenchError(f"the worker exited {code}:\n{self.log_tail()}")
        return code

    def stop(self) -> None:
        """SIGTERM the group (the worker drains), then SIGKILL it if it has not exited."""
        try:
            if self.popen.poll() is None:
                self._signal_group(signal.SIGTERM)
                try:
                    self.popen.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    self._signal_group(signal.SIGKILL)
                    self.popen.wait(timeout=10)
            # Children of a supervisor that outlived it share its group.
            self._signal_group(signal.SIGKILL)
        finally:
            self._log.close()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signum)


def guarded(run: Callable[[], object], cleanup: Callable[[], object]) -> int | None:
    """Run ``run``, then ``cleanup`` whatever happens; ``None`` when the run ended well, else the
    exit status, said why: 1 for a :class:`BenchError`, 130 for an interrupt."""
    try:
        run()
    except BenchError as exc:
        say(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    finally:
        cleanup()
    return None
