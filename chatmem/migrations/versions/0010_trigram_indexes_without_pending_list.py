"""PostgreSQL's trigram indexes take new rows straight in (fastupdate off)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 11:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from chatmem.memory.recall import search

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _set_fastupdate(on: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return  # SQLite's FTS5 tables have no pending list
    for name in search.pg_index_names():
        if bind.exec_driver_sql("SELECT to_regclass(%s)", (name,)).scalar() is None:
            continue  # no pg_trgm on this server: recall scans
        bind.exec_driver_sql(f"ALTER INDEX {name} SET (fastupdate = {'on' if on else 'off'})")
        if not on:
            # Merge what is already pending, so searches stop reading it now.
            bind.exec_driver_sql("SELECT gin_clean_pending_list(%s::regclass)", (name,))


def upgrade() -> None:
    _set_fastupdate(False)


def downgrade() -> None:
    _set_fastupdate(True)
