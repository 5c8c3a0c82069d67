"""session records by user, newest first (private recall)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_chatmem_session_user_recorded",
        "chatmem_session",
        ["user_id", "recorded_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_chatmem_session_user_recorded", table_name="chatmem_session")
