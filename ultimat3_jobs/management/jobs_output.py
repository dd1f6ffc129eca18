"""What every listing verb of ``manage.py jobs`` writes before its own table: with ``--json``
one JSON document, and for an empty listing one line saying so.

Layer: surface."""

from __future__ import annotations

import json
from collections.abc import Sized
from typing import Any

from django.core.management.base import OutputWrapper


class ListingVerbs:
    """Mixed into the verbs' classes (and so into the ``jobs`` Command)."""

    stdout: OutputWrapper

    def _whole(
        self, as_json: bool, document: Any, listing: Sized, nothing: str, indent: int | None = None
    ) -> bool:
        """Write ``document`` as one JSON document when ``as_json``, else the line ``nothing``
        when ``listing`` is empty, and answer True; answer False, having written nothing, when
        the caller is to write its listing."""
        if as_json:
            self.stdout.write(json.dumps(document, indent=indent))
            return True
        if not listing:
            self.stdout.write(nothing)
            return True
        return False
