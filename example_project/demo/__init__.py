"""The demo app: a page that enqueues jobs and lists the newest ones."""

from __future__ import annotations
