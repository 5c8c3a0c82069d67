"""MCP tasks: a held call a client can wait on

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 22:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chatmem_task",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("tool", sa.String(length=64), nullable=False),
        sa.Column("held_call_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_message", sa.Text(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("ttl_ms", sa.Integer(), nullable=False),
        sa.Column("run_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_chatmem_task"),
        sa.UniqueConstraint("held_call_id", name="uq_chatmem_task_held_call_id"),
    )
    op.create_index("ix_chatmem_task_user_id", "chatmem_task", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_chatmem_task_user_id", table_name="chatmem_task")
    op.drop_table("chatmem_task")
