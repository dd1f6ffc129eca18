"""Process identities: how a worker, a scheduler or a relay names itself in the store."""

from __future__ import annotations

import os
import socket
import uuid


def default_worker_id() -> str:
    """``host:pid:random``: unique even when a restarted process reuses a pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
