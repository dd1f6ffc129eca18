"""What the worker, the scheduler and the relay share: idle backoff, process ids, the body pool
and per-thread connection cleanup, and the store errors a loop rides out."""
