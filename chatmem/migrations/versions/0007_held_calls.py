"""calls held by `ask` guardrails, and ledger outcomes long enough to name them

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 03:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chatmem_held_call",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=64), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("call_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("user_name", sa.String(length=200), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("guidance_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=True),
        sa.Column("decided_by", sa.String(length=64), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_chatmem_held_call"),
    )
    op.create_index(
        "ix_chatmem_held_call_lookup", "chatmem_held_call", ["user_id", "tool", "call_hash"]
    )
    op.create_index("ix_chatmem_held_call_state", "chatmem_held_call", ["state", "id"])
    # `granted-run` does not fit in 8 characters.
    with op.batch_alter_table("chatmem_ledger") as batch:
        batch.alter_column("outcome", type_=sa.String(length=16), existing_type=sa.String(length=8))


def downgrade() -> None:
    with op.batch_alter_table("chatmem_ledger") as batch:
        batch.alter_column("outcome", type_=sa.String(length=8), existing_type=sa.String(length=16))
    op.drop_index("ix_chatmem_held_call_state", table_name="chatmem_held_call")
    op.drop_index("ix_chatmem_held_call_lookup", table_name="chatmem_held_call")
    op.drop_table("chatmem_held_call")
