"""AI pre-review: an advisory note on pending proposals, and its jobs

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07 01:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chatmem_guidance") as batch:
        batch.add_column(sa.Column("pre_review_note", sa.Text(), nullable=True))
        batch.add_column(sa.Column("pre_review_model", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("pre_review_at", sa.DateTime(), nullable=True))
    op.create_table(
        "chatmem_pre_review_job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guidance_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_run_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["guidance_id"],
            ["chatmem_guidance.id"],
            name="fk_chatmem_pre_review_job_guidance_id_chatmem_guidance",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_chatmem_pre_review_job"),
        sa.UniqueConstraint("guidance_id", name="uq_chatmem_pre_review_job_guidance_id"),
    )
    op.create_index(
        "ix_chatmem_pre_review_job_due", "chatmem_pre_review_job", ["status", "next_run_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_chatmem_pre_review_job_due", table_name="chatmem_pre_review_job")
    op.drop_table("chatmem_pre_review_job")
    with op.batch_alter_table("chatmem_guidance") as batch:
        for name in ("pre_review_at", "pre_review_model", "pre_review_note"):
            batch.drop_column(name)
