"""Helpers the project's own tests share: subprocesses (``processes``)."""
