"""token binding: user fingerprint, expiry, read-only scope

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 10:00:00.000000

Tokens made before this revision keep a NULL fingerprint and are bound to
the user behind their id at their next use (README, "API tokens").
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # batch mode: SQLite cannot drop columns in place (downgrade), and is harmless here.
    with op.batch_alter_table("chatmem_token") as batch:
        batch.add_column(sa.Column("user_fingerprint", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("expires_at", sa.DateTime(), nullable=True))
        batch.add_column(
            sa.Column("read_only", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("chatmem_token") as batch:
        batch.drop_column("read_only")
        batch.drop_column("expires_at")
        batch.drop_column("user_fingerprint")
