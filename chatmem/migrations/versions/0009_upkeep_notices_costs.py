"""staleness, review dates, recall use, notifications, what each session started with, job usage

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 06:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chatmem_guidance") as batch:
        batch.add_column(sa.Column("review_after", sa.Date(), nullable=True))
        batch.add_column(sa.Column("target_gone_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("last_recalled_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("pending_since", sa.DateTime(), nullable=True))
    with op.batch_alter_table("chatmem_session") as batch:
        batch.add_column(sa.Column("block_revision", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("block_chars", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("prompt_tokens", sa.Integer(), nullable=True))
    with op.batch_alter_table("chatmem_summary_job") as batch:
        batch.add_column(sa.Column("outcome", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("input_tokens", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("output_tokens", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("finished_at", sa.DateTime(), nullable=True))
    op.create_table(
        "chatmem_block_use",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("guidance_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["chatmem_session.id"],
            name="fk_chatmem_block_use_session_id_chatmem_session",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "guidance_id", name="pk_chatmem_block_use"),
    )
    op.create_index("ix_chatmem_block_use_entry", "chatmem_block_use", ["guidance_id", "at"])
    op.create_table(
        "chatmem_notify_job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_run_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chatmem_notify_job"),
    )
    op.create_index("ix_chatmem_notify_job_due", "chatmem_notify_job", ["status", "next_run_at"])


def downgrade() -> None:
    op.drop_index("ix_chatmem_notify_job_due", table_name="chatmem_notify_job")
    op.drop_table("chatmem_notify_job")
    op.drop_index("ix_chatmem_block_use_entry", table_name="chatmem_block_use")
    op.drop_table("chatmem_block_use")
    with op.batch_alter_table("chatmem_summary_job") as batch:
        for name in ("finished_at", "output_tokens", "input_tokens", "outcome"):
            batch.drop_column(name)
    with op.batch_alter_table("chatmem_session") as batch:
        for name in ("prompt_tokens", "block_chars", "block_revision"):
            batch.drop_column(name)
    with op.batch_alter_table("chatmem_guidance") as batch:
        for name in ("pending_since", "last_recalled_at", "target_gone_at", "review_after"):
            batch.drop_column(name)
