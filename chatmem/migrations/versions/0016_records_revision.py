"""The session records' revision, counted by triggers on chatmem_session

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07 23:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from chatmem.memory.recall import records_revision

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chatmem_records_revision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chatmem_records_revision"),
    )
    connection = op.get_bind()
    records_revision.add_row(connection)
    records_revision.install(connection)


def downgrade() -> None:
    records_revision.uninstall(op.get_bind())
    op.drop_table("chatmem_records_revision")
