"""Settings of the ``runserver`` subprocesses that ``tests/webhooks/test_inbound_runserver.py``
starts: the suite's settings, the test receivers as the URLconf, and a WSGI application that
counts the bytes the application read of each request's body.

``ULTIMAT3_WEBHOOK_DB_NAME`` names the database pytest-django created for the parent test run.
With ``ULTIMAT3_WEBHOOK_STORE_PORT`` set, the job store is another alias on that (closed) port:
the job store is down while the rest of the site runs.
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES
from tests.settings import ULTIMAT3_JOBS as SUITE_JOBS

WEBHOOK_SERVER_APPLICATION_NAME = "ultimat3_jobs.webhook_server_test"
"""The ``application_name`` of every database session the server opens."""

ROOT_URLCONF = "tests.webhooks.receivers"
WSGI_APPLICATION = "tests.webhooks.counting.application"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

_default = DATABASES["default"]
DATABASES = {
    "default": {
        **_default,
        "NAME": os.environ.get("ULTIMAT3_WEBHOOK_DB_NAME") or f"test_{_default['NAME']}",
        "OPTIONS": {
            **_default.get("OPTIONS", {}),
            "application_name": WEBHOOK_SERVER_APPLICATION_NAME,
        },
    },
}
ULTIMAT3_JOBS = dict(SUITE_JOBS)

if os.environ.get("ULTIMAT3_WEBHOOK_STORE_PORT"):
    DATABASES["store"] = {
        **DATABASES["default"],
        "HOST": "127.0.0.1",
        "PORT": os.environ["ULTIMAT3_WEBHOOK_STORE_PORT"],
        "OPTIONS": {**DATABASES["default"]["OPTIONS"], "connect_timeout": 3},
    }
    ULTIMAT3_JOBS["DATABASE"] = "store"
