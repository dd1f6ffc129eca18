"""The runtime (L4): the loops that run in a process — the worker, the scheduler, the outbox
relay — over the helpers they share in ``runtime.common``.

Speaks to the store only through the driver seam it is handed; never imports a concrete driver.
The scheduler and the relay never import the worker; ``runtime.process`` wires them together.
"""
