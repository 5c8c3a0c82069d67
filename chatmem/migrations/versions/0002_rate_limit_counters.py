"""rate limit counters

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 15:42:44.130191
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chatmem_rate",
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("window", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("token_id", "window", name=op.f("pk_chatmem_rate")),
    )


def downgrade() -> None:
    op.drop_table("chatmem_rate")
