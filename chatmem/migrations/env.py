"""Alembic environment for chatmem's own tables.

The engine comes from the Flask app (`chatmem.migrate.alembic_config`), never
from an .ini file. Only `chatmem_*` tables are compared, so the host's tables
on the same database are invisible here; the trigram search objects are
engine-specific DDL that the migrations manage by hand (`memory.recall.search`), so
they are left out of comparisons too.
"""

from __future__ import annotations

from alembic import context

from chatmem.memory.models import Base
from chatmem.migrate import VERSION_TABLE, include_name

# A fixed key for PostgreSQL's advisory lock: two workers upgrading at once
# take turns, and the second finds the database already at head.
LOCK_KEY = 0x63686174  # "chat"


def run() -> None:
    if context.is_offline_mode():
        raise RuntimeError("chatmem migrations run online, on the app's engine.")
    engine = context.config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            version_table=VERSION_TABLE,
            include_name=include_name,
            compare_type=True,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LOCK_KEY})")
            context.run_migrations()


run()
