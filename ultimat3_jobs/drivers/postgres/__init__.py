"""The PostgreSQL driver: one method per named statement of ``sql/*.sql``.

A concrete driver: imports L1, L2, the models (for their raw-SQL managers) and psycopg; never the
runtime. ``PostgresDriver`` lives in :mod:`.driver`; this package stays light so that the models
can load :mod:`.queries` without a cycle.
"""
