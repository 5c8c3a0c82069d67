"""rate-limit counts leave the database (Flask-Limiter's store keeps them)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 06:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Counts of at most the last minute: nothing in it is worth keeping.
    op.drop_table("chatmem_rate")


def downgrade() -> None:
    op.create_table(
        "chatmem_rate",
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("window", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("token_id", "window", name=op.f("pk_chatmem_rate")),
    )
