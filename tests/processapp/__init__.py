"""Jobs only the worker subprocesses of ``tests/process/`` declare (``tests.settings_process``).

The parent test process does not install this app: it enqueues these jobs through the driver by
name, which needs no declaration.
"""
