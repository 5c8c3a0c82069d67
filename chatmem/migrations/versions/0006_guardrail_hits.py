"""guardrail hit counts, and ledger rows that name the guardrail that refused them

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 03:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chatmem_guidance") as batch:
        batch.add_column(sa.Column("hits", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_hit_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("chatmem_ledger") as batch:
        batch.add_column(sa.Column("guidance_id", sa.Integer(), nullable=True))
    # A refusal's rows by guardrail (the Active tab's link), and the dry run's window.
    op.create_index("ix_chatmem_ledger_guidance", "chatmem_ledger", ["guidance_id", "id"])
    op.create_index("ix_chatmem_ledger_at", "chatmem_ledger", ["at"])
    if op.get_context().dialect.name == "postgresql":
        # The dry run reads single inputs of many rows; `json` re-parses per `->`.
        op.alter_column(
            "chatmem_ledger",
            "arguments",
            type_=postgresql.JSONB(),
            existing_type=sa.JSON(),
            postgresql_using="arguments::jsonb",
        )


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.alter_column(
            "chatmem_ledger",
            "arguments",
            type_=sa.JSON(),
            existing_type=postgresql.JSONB(),
            postgresql_using="arguments::json",
        )
    op.drop_index("ix_chatmem_ledger_at", table_name="chatmem_ledger")
    op.drop_index("ix_chatmem_ledger_guidance", table_name="chatmem_ledger")
    with op.batch_alter_table("chatmem_ledger") as batch:
        batch.drop_column("guidance_id")
    with op.batch_alter_table("chatmem_guidance") as batch:
        batch.drop_column("last_hit_at")
        batch.drop_column("hits")
