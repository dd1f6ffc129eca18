"""A small Django project that shows ultimat3-jobs in use; run it with ./scripts/demo."""

from __future__ import annotations
