"""The job model (L3): declarations, the registry, the job context, the enqueue path, the
transaction rule, cron schedules, tracing and the failed-attempt policy.

Imports the core and the driver seam only; never a concrete driver, the models or the runtime.
Import the public names from ``ultimat3_jobs`` itself.
"""
