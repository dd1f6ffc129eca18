"""What the worker, the scheduler and the relay share: their configs' start from the settings,
the frame of a service loop (``service.py``), idle backoff, process ids, the body pool and
per-thread connection cleanup, and the store errors a loop rides out."""
