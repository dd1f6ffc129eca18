# ruff: noqa: DJ008 - test tables, never shown
"""Tables for the tests of consumers and subject requests (no jobs module: nothing declared
here is autodiscovered)."""

from __future__ import annotations

from django.db import models


class FeedRow(models.Model):
    """A row of the stream a test consumer reads, in id order."""

    payload = models.CharField(max_length=100, blank=True, default="")


class FeedHandled(models.Model):
    """One item a test consumer's handle saw, written in the batch's transaction."""

    row_id = models.BigIntegerField()
    pid = models.IntegerField(default=0)


class FeedTurn(models.Model):
    """One batch a test consumer handled: the cursor before and after it, written in the
    batch's transaction."""

    before = models.BigIntegerField(null=True)
    after = models.BigIntegerField()
    pid = models.IntegerField(default=0)


class Profile(models.Model):
    """A subject table erased by delete."""

    subject = models.CharField(max_length=50)
    display_name = models.CharField(max_length=100)


class Purchase(models.Model):
    """A subject table erased by anonymize (the subject set to NULL, the address blanked)."""

    subject = models.CharField(max_length=50, null=True, blank=True)  # noqa: DJ001
    address = models.CharField(max_length=200, blank=True, default="")
    total = models.IntegerField(default=0)


class Message(models.Model):
    """A subject table erased by a callable (the body replaced, the author cleared)."""

    author = models.CharField(max_length=50, blank=True, default="")
    body = models.TextField(blank=True, default="")


class MessageReply(models.Model):
    """Points at a Message with CASCADE: deleting messages would reach it."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE)
    text = models.CharField(max_length=100, blank=True, default="")
