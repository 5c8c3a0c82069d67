"""revalidation: active guidance whose target changed since its approval

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 01:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chatmem_guidance") as batch:
        batch.add_column(sa.Column("target_changed_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("target_changed_call_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("target_changed_label", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chatmem_guidance") as batch:
        for name in ("target_changed_label", "target_changed_call_id", "target_changed_at"):
            batch.drop_column(name)
