"""MCP resource subscriptions of handshake-era sessions

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07 01:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chatmem_subscription",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("uri", sa.String(length=300), nullable=False),
        sa.Column("seen", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["chatmem_session.id"],
            name="fk_chatmem_subscription_session_id_chatmem_session",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "uri", name="pk_chatmem_subscription"),
    )


def downgrade() -> None:
    op.drop_table("chatmem_subscription")
