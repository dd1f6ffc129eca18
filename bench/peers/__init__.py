"""ultimat3-jobs beside pgqueuer and Procrastinate: the same workload, one run, one table.

``driver`` runs it from the project's environment; each ``*_side`` module is run by its own
system's interpreter (a throw-away virtualenv for a peer) and prints its results as JSON; ``common``
holds what every side shares, using the standard library only; ``report`` renders the table.
"""
