"""The table of consumers: one row per consumer, its committed cursor and counts.

Schema layer: ``models.py`` imports this model so that Django (and its migrations) sees it.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class ConsumerCursor(models.Model):
    """Where one consumer stands: the cursor of the last item it handled, written in the same
    transaction as the batch that moved it."""

    name = models.CharField(max_length=100, primary_key=True)
    # NULL: nothing handled yet, the next turn reads from the source's start.
    cursor = models.JSONField(null=True, blank=True)
    handled = models.BigIntegerField(default=0, db_default=0)
    turns = models.BigIntegerField(default=0, db_default=0)
    created_at = models.DateTimeField(db_default=Now())
    # When the cursor last moved (NULL: never).
    moved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "x_consumer_cursors"

    def __str__(self) -> str:
        return f"{self.name} at {self.cursor!r}"
