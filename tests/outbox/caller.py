"""A caller process that stages a job and dies before its COMMIT.

Run as ``python -m tests.outbox.caller`` with ``DJANGO_SETTINGS_MODULE=tests.settings_outbox``:
it opens ``transaction.atomic()`` on ``default``, enqueues ``tests.record`` (staged, since the
job store is alias ``jobs``), prints one line, then blocks inside the transaction until killed::

    STAGED <job id> <status> <rows it sees for that id> <backend pid>
"""

from __future__ import annotations

import time

import django


def main() -> None:
    django.setup()
    from django.db import connection, transaction

    from tests.testapp import jobs
    from ultimat3_jobs.models import OutboxEntry

    with transaction.atomic():
        result = jobs.record.enqueue(n=7)
        seen = OutboxEntry.objects.filter(id=result.id).count()
        with connection.cursor() as cursor:
            cursor.execute("select pg_backend_pid()")
            (backend,) = cursor.fetchone()
        print(f"STAGED {result.id} {result.status} {seen} {backend}", flush=True)
        time.sleep(3600)  # the test kills this process here, before the COMMIT
    raise SystemExit("the caller was not killed")


if __name__ == "__main__":
    main()
