"""Rows of the PostgreSQL driver's statements, read by column name into the seam's dataclasses.

:func:`~ultimat3_jobs.drivers.postgres.rows.result.fetch` runs a named statement and keeps its
column names; one module per table family maps those rows to ``types.py`` dataclasses. A mapping
asks for the columns it reads by name, once per result, and gets their positions back (no
per-row dict); a statement whose select list lost a column the mapping needs raises
:class:`~ultimat3_jobs.drivers.postgres.rows.result.ColumnMissing` naming both.
"""
